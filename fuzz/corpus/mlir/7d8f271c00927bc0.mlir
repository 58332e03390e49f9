// expected-error @+1 {{'func.func' op cannot create backward function 'taken_bwd': the symbol exists}}
func.func @taken(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate} {
  return %x : tensor<4xf32>
}
func.func @taken_bwd(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
