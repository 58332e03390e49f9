// expected-error @+1 {{'nn.parameter' op init rule 'ones' takes no scale}}
nn.parameter @ones_with_scale : tensor<2xf32> init ones(0.5)
