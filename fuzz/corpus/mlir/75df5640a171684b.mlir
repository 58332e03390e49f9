func.func @layer_yield_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.layer' op layer 'a' yields ('tensor<4xf16>') but its results are ('tensor<4xf32>')}}
  %h = nn.layer "a" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %c = nn.constant dense<1.0> : tensor<4xf16>
    nn.yield %c : tensor<4xf16>
  }
  return %h : tensor<4xf32>
}
