// expected-error @+1 {{'gpipe.stage' op expected backward_input and backward_weight together, got only backward_input}}
gpipe.stage @half_split_backward index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0 backward_input @b0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
