//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

func.func @cross_entropy(%logits: tensor<2x3x5xf32>, %labels: tensor<2x3xi64>) -> tensor<f32> attributes {nn.differentiate} {
  %l = nn.cross_entropy %logits, %labels : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// d mean((x - t)^2) = (x - t) * 2 / N.
func.func @mse(%x: tensor<2x3xf32>, %t: tensor<2x3xf32>) -> tensor<f32> attributes {nn.differentiate} {
  %l = nn.mse %x, %t : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
