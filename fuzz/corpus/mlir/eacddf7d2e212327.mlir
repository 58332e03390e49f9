// expected-error @+1 {{'gpipe.stage' op expected backward function @b to take the forward's arguments 'tensor<4x16xf32>', the saved values 'tensor<4x4xf32>' and then the output gradient 'tensor<4x8xf32>', got '(tensor<4x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>'}}
gpipe.stage @backward_saved_mismatch index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f backward @b
func.func private @f(tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<4x4xf32>) attributes {nn.saved_count = 1 : i64}
func.func private @b(tensor<4x16xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<16x8xf32> attributes {nn.saved_count = 1 : i64}
