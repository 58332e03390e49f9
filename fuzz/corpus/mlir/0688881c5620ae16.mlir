// expected-error @+1 {{'gpipe.stage' op attribute 'input_type' failed to satisfy constraint: type attribute of statically shaped tensor of any type values}}
gpipe.stage @dynamic_input index 0 : tensor<?x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
