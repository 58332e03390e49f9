func.func @gemm_addend_element_type(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<32xf64>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.gemm' op expected operands of one element type, got 'f32' and 'f64'}}
  %r = nn.gemm %a, %b, %c : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf64>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
