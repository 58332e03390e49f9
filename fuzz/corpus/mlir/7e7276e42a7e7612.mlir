// expected-error @+1 {{'nn.parameter' op attribute 'init' failed to satisfy constraint: how a parameter's initial value is drawn at run time}}
nn.parameter @init_not_a_string : tensor<2xf32> {init = 3 : i64}
