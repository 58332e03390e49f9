//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

func.func @cross_entropy_labels_shape(%l: tensor<2x16x32xf32>, %y: tensor<2x32xi64>) -> tensor<f32> {
  // expected-error @+1 {{'nn.cross_entropy' op expected labels of shape [2, 16] for logits [2, 16, 32], got [2, 32]}}
  %c = nn.cross_entropy %l, %y : (tensor<2x16x32xf32>, tensor<2x32xi64>) -> tensor<f32>
  return %c : tensor<f32>
}
