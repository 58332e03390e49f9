// expected-error @+1 {{'gpipe.stage' op expected backward function @f0 to take the forward's arguments 'tensor<4x16xf32>' and then the output gradient 'tensor<4x8xf32>', got '(tensor<4x16xf32>) -> tensor<4x8xf32>'}}
gpipe.stage @backward_without_output_gradient index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @f0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
