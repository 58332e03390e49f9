// A scalar-like [1] addend broadcasts but is not a per-feature bias.
func.func @negative_gemm_scalar_c_stays_gemm(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %c: tensor<1xf32>) -> tensor<8x32xf32> {
  %y = nn.gemm %x, %w, %c : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<1xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
