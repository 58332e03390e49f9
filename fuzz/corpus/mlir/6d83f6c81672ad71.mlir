func.func @insert_slice_missing_strides(%s: tensor<4x8xf32>, %d: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'nn.insert_slice' op slice needs one offset, size and stride per dim of [4, 16], got 2, 2 and 1}}
  %r = nn.insert_slice %s into %d {offsets = array<i64: 0, 0>, strides = array<i64: 1>} : tensor<4x8xf32> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
