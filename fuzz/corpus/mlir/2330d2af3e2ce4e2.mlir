func.func @cross_entropy_grad_loss_gradient_not_scalar(%l: tensor<2x32xf32>, %y: tensor<2xi64>, %d: tensor<1xf32>) -> tensor<2x32xf32> {
  // expected-error @+1 {{'nn.cross_entropy_grad' op operand #2 must be 0D tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<1xf32>'}}
  %g = nn.cross_entropy_grad %l, %y, %d : (tensor<2x32xf32>, tensor<2xi64>, tensor<1xf32>) -> tensor<2x32xf32>
  return %g : tensor<2x32xf32>
}
