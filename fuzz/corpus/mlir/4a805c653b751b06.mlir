// expected-error @+1 {{'nn.param_grads' must be an array of parameter symbols on a 'func.func', got ["w"]}}
func.func private @string_grads() attributes {nn.param_grads = ["w"]}
