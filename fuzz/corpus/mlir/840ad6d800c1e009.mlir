func.func @reduce_sum_axis_out_of_range(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'nn.reduce_sum' op reduce axes [2] must be sorted, distinct and below the rank 2 of [2, 3]}}
  %r = nn.reduce_sum %x {axes = array<i64: 2>} : tensor<2x3xf32> -> tensor<2xf32>
  return %r : tensor<2xf32>
}
