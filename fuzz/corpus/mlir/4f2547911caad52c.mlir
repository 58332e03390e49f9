//===----------------------------------------------------------------------===//
// Indexing and shapes
//===----------------------------------------------------------------------===//

func.func @gather_axis_out_of_range(%t: tensor<32x64xf32>, %i: tensor<4xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{'nn.gather' op axis 2 is out of range for shape [32, 64]}}
  %r = nn.gather %t, %i {axis = 2} : (tensor<32x64xf32>, tensor<4xi64>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
