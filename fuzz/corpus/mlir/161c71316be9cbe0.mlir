func.func @gemm_rank_3(%a: tensor<2x8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.gemm' op expected gemm operands of rank 2, got [2, 8, 16] and [16, 32]}}
  %r = nn.gemm %a, %b : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
