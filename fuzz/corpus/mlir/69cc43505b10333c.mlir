// Sizes whose sum overflows int64 must not wrap around to the dim.
func.func @split_sizes_overflow(%x: tensor<2x96xf32>) -> (tensor<2x9223372036854775807xf32>, tensor<2x9223372036854775807xf32>, tensor<2x98xf32>) {
  // expected-error @+1 {{'nn.split' op split sizes [9223372036854775807, 9223372036854775807, 98] do not sum to 96, dim 1 of [2, 96]}}
  %a, %b, %c = nn.split %x {axis = 1, sizes = array<i64: 9223372036854775807, 9223372036854775807, 98>} : tensor<2x96xf32> -> tensor<2x9223372036854775807xf32>, tensor<2x9223372036854775807xf32>, tensor<2x98xf32>
  return %a, %b, %c : tensor<2x9223372036854775807xf32>, tensor<2x9223372036854775807xf32>, tensor<2x98xf32>
}
