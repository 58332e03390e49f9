func.func @constant_type_mismatch() -> tensor<3xf32> {
  // expected-error @+1 {{'nn.constant' op failed to verify that all of {value, result} have same type}}
  %c = "nn.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  return %c : tensor<3xf32>
}
