func.func @split_non_positive_size(%x: tensor<2x96xf32>) -> (tensor<2x100xf32>, tensor<2x4xf32>) {
  // expected-error @+1 {{'nn.split' op split sizes must be positive, got -4}}
  %a, %b = nn.split %x {axis = 1, sizes = array<i64: 100, -4>} : tensor<2x96xf32> -> tensor<2x100xf32>, tensor<2x4xf32>
  return %a, %b : tensor<2x100xf32>, tensor<2x4xf32>
}
