func.func @transpose_permutation_length(%x: tensor<2x3x4xf32>) -> tensor<3x2x4xf32> {
  // expected-error @+1 {{'nn.transpose' op transpose permutation of length 2 does not match rank 3}}
  %r = nn.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  return %r : tensor<3x2x4xf32>
}
