func.func @insert_slice_out_of_bounds(%s: tensor<4x8xf32>, %d: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'nn.insert_slice' op slice of dim 1 (offset 9, size 8, stride 1) is out of bounds for [4, 16]}}
  %r = nn.insert_slice %s into %d {offsets = array<i64: 0, 9>, strides = array<i64: 1, 1>} : tensor<4x8xf32> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
