func.func @fold_transpose_identity(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %t = nn.transpose %x {perm = array<i64: 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %t : tensor<2x3x4xf32>
}
