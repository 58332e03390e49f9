// expected-error @+1 {{unknown init rule 'xavier' (expected zeros, ones, normal or uniform)}}
nn.parameter @unknown_rule : tensor<2xf32> init xavier
