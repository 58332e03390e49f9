// expected-error @+1 {{'gpipe.stage' op expected backward_weight function @f1 to take the forward's arguments 'tensor<4x8xf32>' and then the output gradient 'tensor<f32>', got '(tensor<4x8xf32>) -> tensor<f32>'}}
gpipe.stage @bad_weight_half index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @b1 backward_weight @f1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
