func.func @linear_feature_mismatch(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'nn.linear' op linear input features 16 do not match the 32 input features of weight [32, 16]}}
  %r = nn.linear %x, %w : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
