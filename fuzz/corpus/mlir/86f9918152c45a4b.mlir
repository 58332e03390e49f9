func.func @param_missing_symbol() -> tensor<4xf32> {
  // expected-error @+1 {{'nn.param' op 'nope' does not name an nn.parameter}}
  %w = nn.param @nope : tensor<4xf32>
  return %w : tensor<4xf32>
}
