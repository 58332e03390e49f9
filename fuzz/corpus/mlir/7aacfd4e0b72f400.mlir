// Constants are not activations: one used by two layers is cloned into
// both, and nothing is left outside. Unnamed ops give layer<N> names, made
// unique.

func.func @constants_cloned_into_layers(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = nn.constant dense<2.0> : tensor<f32>
  %a = nn.softmax %x {axis = 1} : tensor<4x8xf32> -> tensor<4x8xf32>
  %b = nn.mul %a, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %d = nn.softmax %b {axis = 1} : tensor<4x8xf32> -> tensor<4x8xf32>
  %e = nn.mul %d, %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %e : tensor<4x8xf32>
}
