func.func @slice_strided_out_of_bounds(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.slice' op slice of dim 1 (offset 2, size 8, stride 2) is out of bounds for [4, 16]}}
  %s = nn.slice %x {offsets = array<i64: 0, 2>, sizes = array<i64: 4, 8>, strides = array<i64: 1, 2>} : tensor<4x16xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}
