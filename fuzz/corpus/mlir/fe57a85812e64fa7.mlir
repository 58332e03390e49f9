func.func @negative_transpose_not_identity(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %t = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %t : tensor<3x2xf32>
}
