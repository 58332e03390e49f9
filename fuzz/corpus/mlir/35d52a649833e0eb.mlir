func.func @matmul_operand_element_types(%a: tensor<8x16xf32>, %b: tensor<16x4xbf16>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'nn.matmul' op expected operands of one element type, got 'f32' and 'bf16'}}
  %r = nn.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xbf16>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
