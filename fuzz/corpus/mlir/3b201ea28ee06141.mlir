func.func @relu_of_integers(%a: tensor<4xi64>) -> tensor<4xi64> {
  // expected-error @+1 {{'nn.relu' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<4xi64>'}}
  %r = nn.relu %a : tensor<4xi64>
  return %r : tensor<4xi64>
}
