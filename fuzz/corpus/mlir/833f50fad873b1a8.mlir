func.func @reduce_sum_of_integers(%x: tensor<2x3xi64>) -> tensor<3xi64> {
  // expected-error @+1 {{'nn.reduce_sum' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<2x3xi64>'}}
  %r = nn.reduce_sum %x {axes = array<i64: 0>} : tensor<2x3xi64> -> tensor<3xi64>
  return %r : tensor<3xi64>
}
