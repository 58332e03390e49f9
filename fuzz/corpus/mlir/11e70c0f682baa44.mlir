func.func @gather_float_indices(%t: tensor<32x64xf32>, %i: tensor<4xf32>) -> tensor<4x64xf32> {
  // expected-error @+1 {{'nn.gather' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<4xf32>'}}
  %r = nn.gather %t, %i {axis = 0} : (tensor<32x64xf32>, tensor<4xf32>) -> tensor<4x64xf32>
  return %r : tensor<4x64xf32>
}
