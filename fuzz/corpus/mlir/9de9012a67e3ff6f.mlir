// An error inside a layer body is reported at the op in the body.

module @mixing_inside_layer {
  func.func @forward(%x: tensor<8x10xf32>) -> tensor<8x10xf32> {
    %0 = nn.layer "0" (%x) : (tensor<8x10xf32>) -> tensor<8x10xf32> {
    ^bb0(%a: tensor<8x10xf32>):
      // expected-error @+1 {{cannot micro-batch: 'nn.softmax' mixes samples along the batch dimension (dim 0 of operand #0 of type 'tensor<8x10xf32>')}}
      %p = nn.softmax %a {axis = 0} : tensor<8x10xf32> -> tensor<8x10xf32>
      nn.yield %p : tensor<8x10xf32>
    }
    return %0 : tensor<8x10xf32>
  }
}
