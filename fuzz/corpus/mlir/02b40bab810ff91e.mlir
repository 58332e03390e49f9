func.func @gather_result_shape(%t: tensor<32x64xf32>, %i: tensor<4xi64>) -> tensor<4x32xf32> {
  // expected-error @+1 {{'nn.gather' op expected result shape [4, 64] but the result type has shape [4, 32]}}
  %r = nn.gather %t, %i {axis = 0} : (tensor<32x64xf32>, tensor<4xi64>) -> tensor<4x32xf32>
  return %r : tensor<4x32xf32>
}
