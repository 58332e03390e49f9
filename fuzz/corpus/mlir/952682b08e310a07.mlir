func.func @softmax_grad_types(%y: tensor<4x8xf32>, %dy: tensor<4x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.softmax_grad' op failed to verify that all of {output, grad, result} have same type}}
  %dx = "nn.softmax_grad"(%y, %dy) <{axis = 1 : i64}> : (tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<4x8xf32>
  return %dx : tensor<4x8xf32>
}
