func.func @softmax_grad_axis(%y: tensor<4x8xf32>, %dy: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.softmax_grad' op axis 2 is out of range for shape [4, 8]}}
  %dx = nn.softmax_grad %y, %dy {axis = 2} : tensor<4x8xf32>
  return %dx : tensor<4x8xf32>
}
