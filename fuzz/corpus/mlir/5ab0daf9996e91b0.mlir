func.func @split(%x: tensor<2x16x96xf32>) -> (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x12x96xf32>) {
  %q, %k, %v = nn.split %x {axis = 2, sizes = array<i64: 32, 32, 32>} : tensor<2x16x96xf32> -> tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>
  %a, %b = nn.split %x {axis = 1, sizes = array<i64: 4, 12>} : tensor<2x16x96xf32> -> tensor<2x4x96xf32>, tensor<2x12x96xf32>
  return %q, %k, %v, %b : tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x12x96xf32>
}
