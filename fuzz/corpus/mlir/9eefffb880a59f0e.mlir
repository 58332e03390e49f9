// With trans_a the rows of `a` are its dim 1.

module @gemm_trans_a_rows {
  nn.parameter @w : tensor<16x4xf32> init normal(2.0e-02)
  func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x4xf32> {
    %w = nn.param @w : tensor<16x4xf32>
    %xt = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<8x16xf32> -> tensor<16x8xf32>
    %y = nn.gemm %xt, %w {trans_a = true} : (tensor<16x8xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
    return %y : tensor<8x4xf32>
  }
}
