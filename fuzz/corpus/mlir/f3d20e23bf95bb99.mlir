func.func @unranked_operand(%a: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{custom op 'nn.relu' invalid kind of type specified: expected builtin.tensor, but found 'tensor<*xf32>'}}
  %r = nn.relu %a : tensor<*xf32>
  return %r : tensor<*xf32>
}
