// remat none: the backward takes the values the forward saves (its last
// results, nn.saved_count) between the forward's arguments and the output
// gradient.
// expected-error @+1 {{'gpipe.stage' op expected backward function @b to take the 1 values its forward saves (nn.saved_count), got 0}}
gpipe.stage @backward_without_saved_count index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f backward @b
func.func private @f(tensor<4x16xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {nn.saved_count = 1 : i64}
func.func private @b(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
