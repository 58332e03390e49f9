func.func @cast_changes_shape(%a: tensor<4xf32>) -> tensor<5xi64> {
  // expected-error @+1 {{'nn.cast' op cast cannot change the shape [4] to [5]}}
  %r = nn.cast %a : tensor<4xf32> -> tensor<5xi64>
  return %r : tensor<5xi64>
}
