// expected-error @+1 {{'nn.parameter' op parameter 'neither' needs exactly one of an initial value and an init rule}}
nn.parameter @neither : tensor<2xf32>
