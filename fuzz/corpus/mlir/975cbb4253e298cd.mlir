// Attention scores [B, H, T, T]: the batch is a leading (batch-of-matrices)
// dim of both matmul operands; softmax runs over the keys.

module @matmul_attention {
  func.func @forward(%q: tensor<8x2x4x16xf32>, %k: tensor<8x2x4x16xf32>, %v: tensor<8x2x4x16xf32>) -> tensor<8x2x4x16xf32> {
    %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<8x2x4x16xf32> -> tensor<8x2x16x4xf32>
    %s = nn.matmul %q, %kt : (tensor<8x2x4x16xf32>, tensor<8x2x16x4xf32>) -> tensor<8x2x4x4xf32>
    %p = nn.softmax %s {axis = 3} : tensor<8x2x4x4xf32> -> tensor<8x2x4x4xf32>
    %o = nn.matmul %p, %v : (tensor<8x2x4x4xf32>, tensor<8x2x4x16xf32>) -> tensor<8x2x4x16xf32>
    return %o : tensor<8x2x4x16xf32>
  }
}
