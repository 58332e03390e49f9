func.func @matmul_result_shape(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x5xf32> {
  // expected-error @+1 {{'nn.matmul' op expected result shape [8, 4] but the result type has shape [8, 5]}}
  %r = nn.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x5xf32>
  return %r : tensor<8x5xf32>
}
