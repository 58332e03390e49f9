// expected-error @+1 {{'nn.parameter' op initial value of type 'tensor<2xf16>' does not match parameter type 'tensor<2xf32>'}}
nn.parameter @initial_value_element_type : tensor<2xf32> = dense_resource<blob> : tensor<2xf16>
