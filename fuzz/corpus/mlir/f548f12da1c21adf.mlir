func.func @transpose_index_out_of_range(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'nn.transpose' op transpose permutation [2, 0] is not a permutation of 0..1}}
  %r = nn.transpose %x {perm = array<i64: 2, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %r : tensor<3x2xf32>
}
