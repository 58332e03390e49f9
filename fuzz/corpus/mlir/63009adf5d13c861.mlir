// Every verifier rule of the nn ops, with its exact message, and the ODS type
// constraints. No input here may crash gpipe-opt.

// Type constraints from ODS.

func.func @not_of_f32(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.not' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %r = nn.not %a : tensor<4xf32>
  return %r : tensor<4xf32>
}
