// expected-error @+1 {{'gpipe.stage' op expected forward function @f to return the stage output and the 1 values it saves (nn.saved_count), got '(tensor<4x16xf32>) -> tensor<4x8xf32>'}}
gpipe.stage @forward_without_saved_values index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f backward @b
func.func private @f(tensor<4x16xf32>) -> tensor<4x8xf32> attributes {nn.saved_count = 1 : i64}
func.func private @b(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
