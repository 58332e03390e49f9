func.func @gemm_inner_dims_transposed(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'nn.gemm' op gemm inner dimensions differ: [8, 16] times [16, 32]^T (16 vs 32)}}
  %r = nn.gemm %a, %b {trans_b = true} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
