func.func @pow_broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'nn.pow' op operand shapes [2, 3] and [2] are not broadcast-compatible}}
  %r = nn.pow %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}
