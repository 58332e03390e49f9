func.func @transpose_not_a_permutation(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{'nn.transpose' op transpose permutation [0, 0, 2] is not a permutation of 0..2}}
  %r = nn.transpose %x {perm = array<i64: 0, 0, 2>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  return %r : tensor<2x3x4xf32>
}
