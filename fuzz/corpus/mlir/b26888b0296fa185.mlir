func.func @linear_bias_element_type(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf16>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.linear' op expected input and bias of one element type, got 'f32' and 'f16'}}
  %r = nn.linear %x, %w, %b : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf16>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
