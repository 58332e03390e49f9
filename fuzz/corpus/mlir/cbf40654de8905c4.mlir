func.func @unsqueeze_axis_too_large(%x: tensor<4xf32>) -> tensor<4x1xf32> {
  // expected-error @+1 {{'nn.unsqueeze' op unsqueeze axes [2] must be sorted, distinct and below 2}}
  %u = nn.unsqueeze %x {axes = array<i64: 2>} : tensor<4xf32> -> tensor<4x1xf32>
  return %u : tensor<4x1xf32>
}
