func.func @negative_matmul_batched_rhs_stays_matmul(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32> {
  %s = nn.matmul %q, %k : (tensor<2x4x16x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x16x16xf32>
  return %s : tensor<2x4x16x16xf32>
}
