func.func @linear(%x: tensor<2x16x32xf32>, %w: tensor<32x96xf32>, %wt: tensor<96x32xf32>, %b: tensor<96xf32>) -> (tensor<2x16x96xf32>, tensor<2x16x96xf32>, tensor<2x16x96xf32>, tensor<2x16x96xf32>) {
  %l0 = nn.linear %x, %w : (tensor<2x16x32xf32>, tensor<32x96xf32>) -> tensor<2x16x96xf32>
  %l1 = nn.linear %x, %w, %b : (tensor<2x16x32xf32>, tensor<32x96xf32>, tensor<96xf32>) -> tensor<2x16x96xf32>
  %l2 = nn.linear %x, %wt {transpose_weight = true} : (tensor<2x16x32xf32>, tensor<96x32xf32>) -> tensor<2x16x96xf32>
  %l3 = nn.linear %x, %wt, %b {transpose_weight = true} : (tensor<2x16x32xf32>, tensor<96x32xf32>, tensor<96xf32>) -> tensor<2x16x96xf32>
  return %l0, %l1, %l2, %l3 : tensor<2x16x96xf32>, tensor<2x16x96xf32>, tensor<2x16x96xf32>, tensor<2x16x96xf32>
}
