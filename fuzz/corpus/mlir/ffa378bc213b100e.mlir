// expected-error @+1 {{'gpipe.stage' op backward function @other is a 'gpipe.stage', expected a 'func.func'}}
gpipe.stage @backward_not_a_function index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @other
gpipe.stage @other index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
