// Linear and gemm keep the rows; the weight and bias keep their types.

module @linear_on_3d_input {
  nn.parameter @w : tensor<32x16xf32> init normal(2.0e-02)
  nn.parameter @b : tensor<32xf32> init zeros
  func.func @forward(%x: tensor<8x5x16xf32>) -> tensor<8x5x32xf32> {
    %w = nn.param @w : tensor<32x16xf32>
    %b = nn.param @b : tensor<32xf32>
    %y = nn.linear %x, %w, %b {transpose_weight = true} : (tensor<8x5x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x5x32xf32>
    return %y : tensor<8x5x32xf32>
  }
}
