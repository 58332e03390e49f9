func.func @linear_result_shape(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'nn.linear' op expected result shape [8, 32] but the result type has shape [8, 16]}}
  %r = nn.linear %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
