func.func @yield_outside_layer(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.yield' op expects parent op 'nn.layer'}}
  nn.yield %x : tensor<4xf32>
}
