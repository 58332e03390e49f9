// Scalar logits have no class dim (this crashed the verifier once).
func.func @cross_entropy_scalar_logits(%l: tensor<f32>, %y: tensor<i64>) -> tensor<f32> {
  // expected-error @+1 {{'nn.cross_entropy' op expected logits of rank >= 1, got []}}
  %c = nn.cross_entropy %l, %y : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return %c : tensor<f32>
}
