func.func @cross_entropy_loss_element_type(%l: tensor<2x32xf32>, %y: tensor<2xi64>) -> tensor<f16> {
  // expected-error @+1 {{'nn.cross_entropy' op expected logits and loss of one element type, got 'f32' and 'f16'}}
  %c = nn.cross_entropy %l, %y : (tensor<2x32xf32>, tensor<2xi64>) -> tensor<f16>
  return %c : tensor<f16>
}
