func.func @layer_yield_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.layer' op layer 'a' yields ('tensor<4xf32>', 'tensor<4xf32>') but its results are ('tensor<4xf32>')}}
  %h = nn.layer "a" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    nn.yield %a, %a : tensor<4xf32>, tensor<4xf32>
  }
  return %h : tensor<4xf32>
}
