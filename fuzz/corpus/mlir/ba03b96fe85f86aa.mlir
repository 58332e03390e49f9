func.func @fold_reshape_of_splat_constant() -> tensor<2x8xf32> {
  %c = nn.constant dense<0.0> : tensor<16xf32>
  %r = nn.reshape %c : tensor<16xf32> -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}
