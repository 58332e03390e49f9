func.func @reshape_element_count(%x: tensor<2x16xf32>) -> tensor<2x15xf32> {
  // expected-error @+1 {{'nn.reshape' op cannot reshape [2, 16] (32 elements) to [2, 15] (30 elements)}}
  %r = nn.reshape %x : tensor<2x16xf32> -> tensor<2x15xf32>
  return %r : tensor<2x15xf32>
}
