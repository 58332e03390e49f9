func.func @split_sizes_do_not_sum(%x: tensor<2x96xf32>) -> (tensor<2x32xf32>, tensor<2x32xf32>) {
  // expected-error @+1 {{'nn.split' op split sizes [32, 32] do not sum to 96, dim 1 of [2, 96]}}
  %a, %b = nn.split %x {axis = 1, sizes = array<i64: 32, 32>} : tensor<2x96xf32> -> tensor<2x32xf32>, tensor<2x32xf32>
  return %a, %b : tensor<2x32xf32>, tensor<2x32xf32>
}
