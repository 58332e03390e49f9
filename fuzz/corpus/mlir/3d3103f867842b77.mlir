nn.parameter @"0.weight" : tensor<2xf32> = dense_resource<w_blob> : tensor<2xf32>
func.func @parameter_dense_resource() -> tensor<2xf32> {
  %w = nn.param @"0.weight" : tensor<2xf32>
  return %w : tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      w_blob: "0x040000000000803F00000040"
    }
  }
#-}
