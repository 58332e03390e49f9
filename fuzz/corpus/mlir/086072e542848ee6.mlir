func.func @gelu_grad_types(%x: tensor<4x8xf32>, %dy: tensor<4x8xf16>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.gelu_grad' op requires the same type for all operands and results}}
  %dx = "nn.gelu_grad"(%x, %dy) : (tensor<4x8xf32>, tensor<4x8xf16>) -> tensor<4x8xf32>
  return %dx : tensor<4x8xf32>
}
