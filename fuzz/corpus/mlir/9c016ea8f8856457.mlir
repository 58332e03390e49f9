func.func @split_result_count(%x: tensor<2x96xf32>) -> tensor<2x48xf32> {
  // expected-error @+1 {{'nn.split' op expected 2 results for 2 split sizes, got 1}}
  %a = nn.split %x {axis = 1, sizes = array<i64: 48, 48>} : tensor<2x96xf32> -> tensor<2x48xf32>
  return %a : tensor<2x48xf32>
}
