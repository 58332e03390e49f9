func.func @matmul_result_element_type(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf16> {
  // expected-error @+1 {{'nn.matmul' op expected operands and result of one element type, got 'f32' and 'f16'}}
  %r = nn.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf16>
  return %r : tensor<8x4xf16>
}
