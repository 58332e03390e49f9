nn.parameter @zeros : tensor<4xf32> init zeros
nn.parameter @ones : tensor<4xbf16> init ones
nn.parameter @normal : tensor<4x4xf16> init normal(2.0e-02)
nn.parameter @uniform : tensor<4x4xf64> init uniform(0.1)
func.func @parameter_init_rules() -> (tensor<4xf32>, tensor<4xbf16>, tensor<4x4xf16>, tensor<4x4xf64>) {
  %z = nn.param @zeros : tensor<4xf32>
  %o = nn.param @ones : tensor<4xbf16>
  %n = nn.param @normal : tensor<4x4xf16>
  %u = nn.param @uniform : tensor<4x4xf64>
  return %z, %o, %n, %u : tensor<4xf32>, tensor<4xbf16>, tensor<4x4xf16>, tensor<4x4xf64>
}
