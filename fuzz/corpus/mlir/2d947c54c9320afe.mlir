module @gemm_rows {
  nn.parameter @w : tensor<4x16xf32> init normal(2.0e-02)
  nn.parameter @b : tensor<4xf32> init zeros
  func.func @forward(%x: tensor<8x16xf32>) -> tensor<8x4xf32> {
    %w = nn.param @w : tensor<4x16xf32>
    %b = nn.param @b : tensor<4xf32>
    %y = nn.gemm %x, %w, %b {trans_b = true} : (tensor<8x16xf32>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<8x4xf32>
    return %y : tensor<8x4xf32>
  }
}
