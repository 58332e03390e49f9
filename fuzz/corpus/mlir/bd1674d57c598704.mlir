func.func @gather_grad_element_types(%ids: tensor<3xi64>, %dy: tensor<3x4xf16>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'nn.gather_grad' op expected gradient and result of one element type, got 'f16' and 'f32'}}
  %t = nn.gather_grad %ids, %dy {axis = 0} : (tensor<3xi64>, tensor<3x4xf16>) -> tensor<8x4xf32>
  return %t : tensor<8x4xf32>
}
