func.func @unsqueeze_unsorted_axes(%m: tensor<16x16xi1>) -> tensor<1x1x16x16xi1> {
  // expected-error @+1 {{'nn.unsqueeze' op unsqueeze axes [1, 0] must be sorted, distinct and below 4}}
  %u = nn.unsqueeze %m {axes = array<i64: 1, 0>} : tensor<16x16xi1> -> tensor<1x1x16x16xi1>
  return %u : tensor<1x1x16x16xi1>
}
