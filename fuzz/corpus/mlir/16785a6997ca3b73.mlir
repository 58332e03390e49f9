func.func @gather_grad_axis(%ids: tensor<3xi64>, %dy: tensor<3xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'nn.gather_grad' op axis 1 is out of range for shape [8]}}
  %t = nn.gather_grad %ids, %dy {axis = 1} : (tensor<3xi64>, tensor<3xf32>) -> tensor<8xf32>
  return %t : tensor<8xf32>
}
