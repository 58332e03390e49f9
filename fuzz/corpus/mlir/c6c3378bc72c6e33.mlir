func.func @linear_element_types(%x: tensor<8x16xf16>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.linear' op expected input and weight of one element type, got 'f16' and 'f32'}}
  %r = nn.linear %x, %w : (tensor<8x16xf16>, tensor<16x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
