nn.parameter @w : tensor<4xf32> init zeros
func.func @param_wrong_type() -> tensor<4xf16> {
  // expected-error @+1 {{'nn.param' op type 'tensor<4xf16>' does not match parameter 'w' of type 'tensor<4xf32>'}}
  %w = nn.param @w : tensor<4xf16>
  return %w : tensor<4xf16>
}
