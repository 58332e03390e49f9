func.func @negative_gemm_trans_a_stays_gemm(%x: tensor<16x8xf32>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %y = nn.gemm %x, %w {trans_a = true} : (tensor<16x8xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
