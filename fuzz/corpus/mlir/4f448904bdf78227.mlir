func.func @split_result_shape(%x: tensor<2x96xf32>) -> (tensor<2x48xf32>, tensor<2x48xf32>) {
  // expected-error @+1 {{'nn.split' op expected result shape [2, 32] but the result type has shape [2, 48]}}
  %a, %b = nn.split %x {axis = 1, sizes = array<i64: 32, 64>} : tensor<2x96xf32> -> tensor<2x48xf32>, tensor<2x48xf32>
  return %a, %b : tensor<2x48xf32>, tensor<2x48xf32>
}
