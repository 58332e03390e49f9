func.func @cross_entropy_grad_loss_gradient_type(%l: tensor<2x32xf32>, %y: tensor<2xi64>, %d: tensor<f64>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'nn.cross_entropy_grad' op expected logits and loss gradient of one element type, got 'f32' and 'f64'}}
  %g = nn.cross_entropy_grad %l, %y, %d : (tensor<2x32xf32>, tensor<2xi64>, tensor<f64>) -> tensor<2x32xf32>
  return %g : tensor<2x32xf32>
}
