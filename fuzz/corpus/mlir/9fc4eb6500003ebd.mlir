//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

func.func @losses(%logits: tensor<2x16x32xf32>, %labels: tensor<2x16xi64>, %p: tensor<8x10xf32>, %t: tensor<8x10xf32>) -> (tensor<f32>, tensor<f32>) {
  %ce = nn.cross_entropy %logits, %labels : (tensor<2x16x32xf32>, tensor<2x16xi64>) -> tensor<f32>
  %mse = nn.mse %p, %t : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<f32>
  return %ce, %mse : tensor<f32>, tensor<f32>
}
