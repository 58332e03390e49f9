// expected-error @+1 {{'gpipe.stage' op expected backward_weight function @w1 to take the 1 values backward_input @i1 hands over (nn.deferred_count), got 0}}
gpipe.stage @deferred_count_mismatch index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @i1 backward_weight @w1
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
func.func private @i1(tensor<4x8xf32>, tensor<f32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {nn.deferred_count = 1 : i64}
func.func private @w1(tensor<4x8xf32>, tensor<f32>, tensor<4x8xf32>) -> tensor<8x8xf32>
