func.func @slice_missing_offsets(%x: tensor<4x16xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'nn.slice' op slice needs one offset, size and stride per dim of [4, 16], got 1, 2 and 2}}
  %s = nn.slice %x {offsets = array<i64: 0>, sizes = array<i64: 4, 8>, strides = array<i64: 1, 1>} : tensor<4x16xf32> -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}
