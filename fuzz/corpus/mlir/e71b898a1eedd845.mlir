// expected-error @+1 {{'nn.parameter' op init rule 'normal' needs init_scale}}
nn.parameter @normal_without_scale : tensor<2xf32> init normal
