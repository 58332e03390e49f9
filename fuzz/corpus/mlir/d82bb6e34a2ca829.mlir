func.func @reduce_sum_result_shape(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'nn.reduce_sum' op expected result shape [1, 3] but the result type has shape [3]}}
  %r = nn.reduce_sum %x {axes = array<i64: 0>, keep_dims = true} : tensor<2x3xf32> -> tensor<3xf32>
  return %r : tensor<3xf32>
}
