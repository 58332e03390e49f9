//===----------------------------------------------------------------------===//
// Reductions and slice insertion
//===----------------------------------------------------------------------===//

func.func @reduce_sum_unsorted_axes(%x: tensor<2x3x4xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'nn.reduce_sum' op reduce axes [2, 0] must be sorted, distinct and below the rank 3 of [2, 3, 4]}}
  %r = nn.reduce_sum %x {axes = array<i64: 2, 0>} : tensor<2x3x4xf32> -> tensor<3xf32>
  return %r : tensor<3xf32>
}
