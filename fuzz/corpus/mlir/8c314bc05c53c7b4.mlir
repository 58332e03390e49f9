// expected-error @+1 {{'nn.parameter' op init rule 'uniform' needs a positive init_scale, got 0.000000e+00}}
nn.parameter @uniform_zero_scale : tensor<2xf32> init uniform(0.0)
