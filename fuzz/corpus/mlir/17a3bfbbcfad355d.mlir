func.func @insert_slice_rank_mismatch(%s: tensor<8xf32>, %d: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'nn.insert_slice' op cannot insert a slice of rank 1 into a tensor of rank 2}}
  %r = nn.insert_slice %s into %d {offsets = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<8xf32> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
