func.func @unsqueeze_repeated_axis(%m: tensor<16xi1>) -> tensor<1x1x16xi1> {
  // expected-error @+1 {{'nn.unsqueeze' op unsqueeze axes [0, 0] must be sorted, distinct and below 3}}
  %u = nn.unsqueeze %m {axes = array<i64: 0, 0>} : tensor<16xi1> -> tensor<1x1x16xi1>
  return %u : tensor<1x1x16xi1>
}
