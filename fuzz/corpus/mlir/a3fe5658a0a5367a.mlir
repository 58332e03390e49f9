func.func @binary_result_element_type(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'nn.div' op expected operands and result of one element type, got 'f32' and 'f16'}}
  %r = nn.div %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>
  return %r : tensor<4xf16>
}
