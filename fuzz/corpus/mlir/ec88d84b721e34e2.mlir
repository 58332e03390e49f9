func.func @gemm_element_types(%a: tensor<8x16xf32>, %b: tensor<16x32xf16>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.gemm' op expected operands of one element type, got 'f32' and 'f16'}}
  %r = nn.gemm %a, %b : (tensor<8x16xf32>, tensor<16x32xf16>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
