func.func @layer_without_yield(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.layer' op layer 'a' body must end in nn.yield}}
  %h = nn.layer "a" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %r = nn.relu %a : tensor<4xf32>
  }
  return %h : tensor<4xf32>
}
