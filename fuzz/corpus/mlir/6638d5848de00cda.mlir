// expected-error @+1 {{'gpipe.stage' op forward function @missing not found}}
gpipe.stage @missing_forward index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @missing backward @b0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
