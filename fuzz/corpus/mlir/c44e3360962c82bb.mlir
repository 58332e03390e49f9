// A matmul whose right operand carries the batch in its columns.

module @matmul_batch_in_columns {
  nn.parameter @w : tensor<4x16xf32> init normal(2.0e-02)
  func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x4xf32> {
    %w = nn.param @w : tensor<4x16xf32>
    %xt = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
    %y = nn.matmul %w, %xt : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    %r = nn.transpose %y {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
    return %r : tensor<8x4xf32>
  }
}
