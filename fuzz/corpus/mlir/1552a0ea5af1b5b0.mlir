func.func @layer_empty_body(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.layer' op expects a non-empty block}}
  %h = nn.layer "a" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
  }
  return %h : tensor<4xf32>
}
