// expected-error @+1 {{'func.func' op cannot attach a cross-entropy loss to a result of type 'tensor<4xi64>': expected a float tensor}}
func.func @forward(%x: tensor<4xi64>) -> tensor<4xi64> {
  return %x : tensor<4xi64>
}
