func.func @gemm_addend_not_broadcastable(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<16xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.gemm' op gemm addend of shape [16] does not broadcast to [8, 32]}}
  %r = nn.gemm %a, %b, %c : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
