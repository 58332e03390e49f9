// expected-error @+1 {{'nn.parameter' op init rule 'normal' needs a positive init_scale, got -2.000000e-02}}
nn.parameter @normal_negative_scale : tensor<2xf32> init normal(-2.0e-02)
