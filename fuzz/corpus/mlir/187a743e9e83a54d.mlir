// expected-error @+1 {{'func.func' op expected one result to attach a cross-entropy loss to, got 0}}
func.func @forward(%x: tensor<4x3xf32>) {
  return
}
