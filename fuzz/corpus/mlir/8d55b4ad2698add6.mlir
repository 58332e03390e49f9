func.func @concat_no_inputs() -> tensor<2x8xf32> {
  // expected-error @+1 {{'nn.concat' op concat needs at least one input}}
  %c = nn.concat {axis = 1} : () -> tensor<2x8xf32>
  return %c : tensor<2x8xf32>
}
