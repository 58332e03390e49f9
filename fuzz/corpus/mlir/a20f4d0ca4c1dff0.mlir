// Transpose moves the batch with its dim.

module @transpose_moves_batch {
  func.func @forward(%x: tensor<8x4x6xf32>) -> tensor<8x4x6xf32> {
    %t = nn.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<8x4x6xf32> -> tensor<6x8x4xf32>
    %s = nn.softmax %t {axis = 2} : tensor<6x8x4xf32> -> tensor<6x8x4xf32>
    %y = nn.transpose %s {perm = array<i64: 1, 2, 0>} : tensor<6x8x4xf32> -> tensor<8x4x6xf32>
    return %y : tensor<8x4x6xf32>
  }
}
