// A blob shorter than its type would be read past its end.
// expected-error @+1 {{'nn.parameter' op resource 'short_blob' holds 4 bytes but 'tensor<2xf32>' needs 8}}
nn.parameter @initial_value_blob_size : tensor<2xf32> = dense_resource<short_blob> : tensor<2xf32>
{-#
  dialect_resources: {
    builtin: {
      short_blob: "0x040000000000803F"
    }
  }
#-}
