func.func @gather_result_element_type(%t: tensor<32x64xf32>, %i: tensor<4xi64>) -> tensor<4x64xf16> {
  // expected-error @+1 {{'nn.gather' op expected data and result of one element type, got 'f32' and 'f16'}}
  %r = nn.gather %t, %i {axis = 0} : (tensor<32x64xf32>, tensor<4xi64>) -> tensor<4x64xf16>
  return %r : tensor<4x64xf16>
}
