// expected-error @+1 {{'gpipe.stage' op expected backward function @b of stage 1 to return the input gradient 'tensor<4x8xf32>' first, got '(tensor<4x8xf32>, tensor<f32>) -> tensor<8x8xf32>'}}
gpipe.stage @backward_without_input_gradient index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b
func.func private @b(tensor<4x8xf32>, tensor<f32>) -> tensor<8x8xf32>
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
