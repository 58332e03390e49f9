func.func @split_axis_out_of_range(%x: tensor<2x96xf32>) -> (tensor<2x48xf32>, tensor<2x48xf32>) {
  // expected-error @+1 {{'nn.split' op axis 2 is out of range for shape [2, 96]}}
  %a, %b = nn.split %x {axis = 2, sizes = array<i64: 48, 48>} : tensor<2x96xf32> -> tensor<2x48xf32>, tensor<2x48xf32>
  return %a, %b : tensor<2x48xf32>, tensor<2x48xf32>
}
