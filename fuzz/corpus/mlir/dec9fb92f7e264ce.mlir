//===----------------------------------------------------------------------===//
// Errors, reported at the function
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'func.func' op expected one result to attach a cross-entropy loss to, got 2}}
func.func @forward(%x: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  return %x, %x : tensor<4x3xf32>, tensor<4x3xf32>
}
