func.func @dynamic_shape_operand(%a: tensor<?x4xf32>, %b: tensor<4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'nn.add' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 1-bit signless integer or 32-bit signless integer or 64-bit signless integer values, but got 'tensor<?x4xf32>'}}
  %r = nn.add %a, %b : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
