func.func @insert_slice_result_type(%s: tensor<4x8xf32>, %d: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.insert_slice' op failed to verify that all of {dest, result} have same type}}
  %r = "nn.insert_slice"(%s, %d) <{offsets = array<i64: 0, 0>, strides = array<i64: 1, 1>}> : (tensor<4x8xf32>, tensor<4x16xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
