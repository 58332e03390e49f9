func.func @parameter_inside_function() {
  // expected-error @+1 {{'nn.parameter' op expects parent op 'builtin.module'}}
  nn.parameter @p : tensor<2xf32> init zeros
  return
}
