// Without an addend beta is irrelevant.
func.func @gemm_no_c_beta_ignored_to_linear(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %y = nn.gemm %x, %w {beta = 0.0 : f32} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
