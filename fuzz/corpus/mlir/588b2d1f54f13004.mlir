func.func @gemm_inner_dims(%a: tensor<8x16xf32>, %b: tensor<32x16xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.gemm' op gemm inner dimensions differ: [8, 16] times [32, 16] (16 vs 32)}}
  %r = nn.gemm %a, %b : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
