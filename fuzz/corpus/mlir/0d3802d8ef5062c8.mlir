// offset + (size - 1) * stride overflows int64; it must not wrap into bounds.
func.func @slice_stride_overflow(%x: tensor<4x16xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'nn.slice' op slice of dim 1 (offset 1, size 2, stride 9223372036854775807) is out of bounds for [4, 16]}}
  %s = nn.slice %x {offsets = array<i64: 0, 1>, sizes = array<i64: 4, 2>, strides = array<i64: 1, 9223372036854775807>} : tensor<4x16xf32> -> tensor<4x2xf32>
  return %s : tensor<4x2xf32>
}
