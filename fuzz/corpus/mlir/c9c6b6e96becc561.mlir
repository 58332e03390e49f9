func.func @reshape_transpose(%x: tensor<2x16x32xf32>) -> tensor<2x4x16x8xf32> {
  %r = nn.reshape %x : tensor<2x16x32xf32> -> tensor<2x16x4x8xf32>
  %t = nn.transpose %r {perm = array<i64: 0, 2, 1, 3>} : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  return %t : tensor<2x4x16x8xf32>
}
