func.func @linear_feature_mismatch_transposed(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'nn.linear' op linear input features 16 do not match the 32 input features of transposed weight [16, 32]}}
  %r = nn.linear %x, %w {transpose_weight = true} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
