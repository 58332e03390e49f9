// expected-error @+1 {{'func.func' op expected a body of one block to differentiate}}
func.func private @external(%x: tensor<4xf32>) -> tensor<4xf32> attributes {nn.differentiate}
