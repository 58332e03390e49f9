// expected-error @+1 {{'gpipe.stage' op expected forward function @f0 to take the stage input 'tensor<4x32xf32>' first, got '(tensor<4x16xf32>) -> tensor<4x8xf32>'}}
gpipe.stage @forward_input_mismatch index 0 : tensor<4x32xf32> -> tensor<4x8xf32> forward @f0 backward @b0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
