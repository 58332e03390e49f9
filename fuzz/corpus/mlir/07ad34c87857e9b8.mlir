func.func @layer_argument_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.layer' op layer 'a' body argument type 'tensor<4xf16>' does not match input type 'tensor<4xf32>'}}
  %h = nn.layer "a" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf16>):
    %c = nn.constant dense<1.0> : tensor<4xf32>
    nn.yield %c : tensor<4xf32>
  }
  return %h : tensor<4xf32>
}
