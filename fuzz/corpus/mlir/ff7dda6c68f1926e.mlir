// An op the pass does not know may not see the batch; one that does not see
// it keeps its types.

module @unknown_op_on_batch {
  func.func @forward(%x: tensor<8x10xf32>) -> tensor<8x10xf32> {
    %c = "test.source"() : () -> tensor<4xf32>
    // expected-error @+1 {{cannot micro-batch: 'test.op' is not known to keep samples apart (dim 0 of operand #0 of type 'tensor<8x10xf32>')}}
    %y = "test.op"(%x, %c) : (tensor<8x10xf32>, tensor<4xf32>) -> tensor<8x10xf32>
    return %y : tensor<8x10xf32>
  }
}
