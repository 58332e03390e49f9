func.func @gemm_addend_widens_result(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<2x8x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.gemm' op gemm addend of shape [2, 8, 32] does not broadcast to [8, 32]}}
  %r = nn.gemm %a, %b, %c : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<2x8x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
