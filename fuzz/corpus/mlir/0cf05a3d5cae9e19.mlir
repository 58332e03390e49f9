// expected-error @+1 {{'nn.parameter' op init rule 'uniform' needs init_scale}}
nn.parameter @uniform_without_scale : tensor<2xf32> init uniform
