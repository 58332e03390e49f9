func.func @constant_blob_size() -> tensor<2xi32> {
  // expected-error @+1 {{'nn.constant' op resource 'long_blob' holds 12 bytes but 'tensor<2xi32>' needs 8}}
  %c = nn.constant dense_resource<long_blob> : tensor<2xi32>
  return %c : tensor<2xi32>
}
{-#
  dialect_resources: {
    builtin: {
      long_blob: "0x04000000010000000200000003000000"
    }
  }
#-}
