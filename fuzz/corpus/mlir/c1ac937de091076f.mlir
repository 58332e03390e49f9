func.func @insert_slice_element_types(%s: tensor<4x8xf16>, %d: tensor<4x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'nn.insert_slice' op expected source and destination of one element type, got 'f16' and 'f32'}}
  %r = nn.insert_slice %s into %d {offsets = array<i64: 0, 0>, strides = array<i64: 1, 1>} : tensor<4x8xf16> into tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
