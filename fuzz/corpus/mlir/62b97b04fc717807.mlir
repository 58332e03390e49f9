func.func @equal_element_type_mismatch(%a: tensor<4xf32>, %b: tensor<4xi64>) -> tensor<4xi1> {
  // expected-error @+1 {{'nn.equal' op expected operands of one element type, got 'f32' and 'i64'}}
  %r = nn.equal %a, %b : (tensor<4xf32>, tensor<4xi64>) -> tensor<4xi1>
  return %r : tensor<4xi1>
}
