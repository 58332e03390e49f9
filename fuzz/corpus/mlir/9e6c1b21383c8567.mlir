func.func @gemm_result_shape(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> tensor<32x8xf32> {
  // expected-error @+1 {{'nn.gemm' op expected result shape [8, 32] but the result type has shape [32, 8]}}
  %r = nn.gemm %a, %b : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<32x8xf32>
  return %r : tensor<32x8xf32>
}
