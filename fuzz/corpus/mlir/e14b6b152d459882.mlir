func.func @slice(%x: tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<2x8xf32>) {
  %s = nn.slice %x {offsets = array<i64: 0, 8>, sizes = array<i64: 4, 8>, strides = array<i64: 1, 1>} : tensor<4x16xf32> -> tensor<4x8xf32>
  %e = nn.slice %x {offsets = array<i64: 1, 1>, sizes = array<i64: 2, 8>, strides = array<i64: 2, 2>} : tensor<4x16xf32> -> tensor<2x8xf32>
  return %s, %e : tensor<4x8xf32>, tensor<2x8xf32>
}
