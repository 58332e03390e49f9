func.func @layer_uses_value_from_above(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %h = nn.layer "a" () : () -> tensor<4xf32> {
    // expected-error @+1 {{'nn.yield' op using value defined outside the region}}
    nn.yield %x : tensor<4xf32>
  }
  return %h : tensor<4xf32>
}
