// expected-error @+1 {{'nn.parameter' op initial value of type 'tensor<3xf32>' does not match parameter type 'tensor<2xf32>'}}
nn.parameter @initial_value_shape : tensor<2xf32> = dense<1.0> : tensor<3xf32>
