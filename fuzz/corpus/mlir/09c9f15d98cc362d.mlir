func.func @unsqueeze(%m: tensor<16x16xi1>) -> (tensor<1x1x16x16xi1>, tensor<16x1x16x1xi1>) {
  %u = nn.unsqueeze %m {axes = array<i64: 0, 1>} : tensor<16x16xi1> -> tensor<1x1x16x16xi1>
  %v = nn.unsqueeze %m {axes = array<i64: 1, 3>} : tensor<16x16xi1> -> tensor<16x1x16x1xi1>
  return %u, %v : tensor<1x1x16x16xi1>, tensor<16x1x16x1xi1>
}
