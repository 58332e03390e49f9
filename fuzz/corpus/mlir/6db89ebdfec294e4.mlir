//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

func.func @no_vjp(%y: tensor<4xf32>, %dy: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  // expected-error @+1 {{'nn.softmax_grad' op is on the gradient path but has no VJP}}
  %dx = nn.softmax_grad %y, %dy {axis = 0} : tensor<4xf32>
  return %dx : tensor<4xf32>
}
