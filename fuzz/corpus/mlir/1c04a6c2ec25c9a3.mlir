func.func @unsqueeze_result_shape(%m: tensor<16x16xi1>) -> tensor<16x1x16xi1> {
  // expected-error @+1 {{'nn.unsqueeze' op expected result shape [1, 16, 16] but the result type has shape [16, 1, 16]}}
  %u = nn.unsqueeze %m {axes = array<i64: 0>} : tensor<16x16xi1> -> tensor<16x1x16xi1>
  return %u : tensor<16x1x16xi1>
}
