func.func @param_names_a_function() -> tensor<4xf32> {
  // expected-error @+1 {{'nn.param' op 'param_names_a_function' does not name an nn.parameter}}
  %w = nn.param @param_names_a_function : tensor<4xf32>
  return %w : tensor<4xf32>
}
