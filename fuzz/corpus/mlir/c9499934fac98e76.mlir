func.func @cross_entropy_grad_labels(%l: tensor<2x32xf32>, %y: tensor<32xi64>, %d: tensor<f32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'nn.cross_entropy_grad' op expected labels of shape [2] for logits [2, 32], got [32]}}
  %g = nn.cross_entropy_grad %l, %y, %d : (tensor<2x32xf32>, tensor<32xi64>, tensor<f32>) -> tensor<2x32xf32>
  return %g : tensor<2x32xf32>
}
