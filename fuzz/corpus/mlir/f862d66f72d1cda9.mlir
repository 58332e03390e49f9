//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

func.func @layer_argument_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.layer' op layer 'a' has 1 inputs but its body takes 0 arguments}}
  %h = nn.layer "a" (%x) : (tensor<4xf32>) -> tensor<4xf32> {
    %c = nn.constant dense<1.0> : tensor<4xf32>
    nn.yield %c : tensor<4xf32>
  }
  return %h : tensor<4xf32>
}
