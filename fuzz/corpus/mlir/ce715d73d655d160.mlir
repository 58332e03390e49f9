module @layer_norm_over_batch {
  nn.parameter @g : tensor<8x16xf32> init ones
  func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %g = nn.param @g : tensor<8x16xf32>
    // expected-error @+1 {{cannot micro-batch: 'nn.layer_norm' mixes samples along the batch dimension (dim 0 of operand #0 of type 'tensor<8x16xf32>')}}
    %y = nn.layer_norm %x, %g {axis = 0} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    return %y : tensor<8x16xf32>
  }
}
