// A reshape chain back to the input type disappears.
func.func @fold_reshape_round_trip(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = nn.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
  %b = nn.reshape %a : tensor<32xf32> -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}
