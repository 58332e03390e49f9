func.func @linear_two_biases(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  // expected-error @+1 {{'nn.linear' op operand group starting at #2 requires 0 or 1 element, but found 2}}
  %r = "nn.linear"(%x, %w, %b, %b) : (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}
