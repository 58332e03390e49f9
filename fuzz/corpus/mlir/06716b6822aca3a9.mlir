func.func @reshape_element_type(%x: tensor<2x16xf32>) -> tensor<32xf16> {
  // expected-error @+1 {{'nn.reshape' op expected input and result of one element type, got 'f32' and 'f16'}}
  %r = nn.reshape %x : tensor<2x16xf32> -> tensor<32xf16>
  return %r : tensor<32xf16>
}
