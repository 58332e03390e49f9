func.func @cross_entropy_loss_not_scalar(%l: tensor<2x32xf32>, %y: tensor<2xi64>) -> tensor<1xf32> {
  // expected-error @+1 {{'nn.cross_entropy' op result #0 must be 0D tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<1xf32>'}}
  %c = nn.cross_entropy %l, %y : (tensor<2x32xf32>, tensor<2xi64>) -> tensor<1xf32>
  return %c : tensor<1xf32>
}
