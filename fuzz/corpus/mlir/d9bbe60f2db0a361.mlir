// expected-error @+1 {{'gpipe.stage' op expected a finite non-negative forward_time, got -1.000000e+00}}
gpipe.stage @negative_time index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0 {forward_time = -1.0 : f64}
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
