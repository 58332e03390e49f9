// expected-error @+1 {{'nn.parameter' op parameters must have a float element type, got 'i64'}}
nn.parameter @integer_parameter : tensor<2xi64> init zeros
