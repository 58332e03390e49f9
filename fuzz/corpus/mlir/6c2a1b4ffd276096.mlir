func.func @insert_slice(%s: tensor<4x8xf32>, %d: tensor<4x16xf32>, %e: tensor<2x8xf32>) -> tensor<4x16xf32> {
  %r = nn.insert_slice %s into %d {offsets = array<i64: 0, 8>, strides = array<i64: 1, 1>} : tensor<4x8xf32> into tensor<4x16xf32>
  %t = nn.insert_slice %e into %r {offsets = array<i64: 1, 1>, strides = array<i64: 2, 2>} : tensor<2x8xf32> into tensor<4x16xf32>
  return %t : tensor<4x16xf32>
}
