module @softmax_over_batch {
  func.func @forward(%x: tensor<8x10xf32>) -> tensor<8x10xf32> {
    // expected-error @+1 {{cannot micro-batch: 'nn.softmax' mixes samples along the batch dimension (dim 0 of operand #0 of type 'tensor<8x10xf32>')}}
    %p = nn.softmax %x {axis = 0} : tensor<8x10xf32> -> tensor<8x10xf32>
    return %p : tensor<8x10xf32>
  }
}
