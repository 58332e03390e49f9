//===----------------------------------------------------------------------===//
// Normalization: fused gradient kernels
//===----------------------------------------------------------------------===//

func.func @softmax(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> attributes {nn.differentiate} {
  %y = nn.softmax %x {axis = 2} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

func.func @layer_norm(%x: tensor<2x3x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<2x3x4xf32> attributes {nn.differentiate} {
  %y = nn.layer_norm %x, %g, %b {axis = 2, epsilon = 1.0e-05 : f32} : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// Without a bias the bias gradient is left unused.
func.func @layer_norm_without_bias(%x: tensor<2x3x4xf32>, %g: tensor<3x4xf32>) -> tensor<2x3x4xf32> attributes {nn.differentiate} {
  %y = nn.layer_norm %x, %g {axis = 1, epsilon = 1.0e-06 : f32} : (tensor<2x3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}
