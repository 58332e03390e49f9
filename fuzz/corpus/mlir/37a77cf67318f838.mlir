func.func @fold_reshape_of_reshape(%x: tensor<4x8xf32>) -> tensor<2x2x8xf32> {
  %a = nn.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  %b = nn.reshape %a : tensor<32xf32> -> tensor<2x2x8xf32>
  return %b : tensor<2x2x8xf32>
}
