module @layer_norm_over_features {
  nn.parameter @g : tensor<4x16xf32> init ones
  nn.parameter @b : tensor<4x16xf32> init zeros
  func.func @forward(%x: tensor<8x4x16xf32>) -> tensor<8x4x16xf32> {
    %g = nn.param @g : tensor<4x16xf32>
    %b = nn.param @b : tensor<4x16xf32>
    %y = nn.layer_norm %x, %g, %b {axis = 1, epsilon = 1.0e-05 : f32} : (tensor<8x4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<8x4x16xf32>
    return %y : tensor<8x4x16xf32>
  }
}
