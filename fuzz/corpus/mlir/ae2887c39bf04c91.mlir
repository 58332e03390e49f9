// Zero-bubble halves: the input-gradient half goes upstream before the
// weight-gradient half runs.

gpipe.pipeline @valid_split_backward stages [@s0, @s1] microbatches 1 schedule custom remat stage {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
    gpipe.send @s0 mb 0 forward to 1 : tensor<4x8xf32>
    gpipe.recv @s0 mb 0 backward from 1 : tensor<4x8xf32>
    gpipe.backward @s0 mb 0
    gpipe.step @s0
  }
  gpipe.program rank 1 {
    gpipe.recv @s1 mb 0 forward from 0 : tensor<4x8xf32>
    gpipe.forward @s1 mb 0
    gpipe.backward_input @s1 mb 0
    gpipe.send @s1 mb 0 backward to 0 : tensor<4x8xf32>
    gpipe.backward_weight @s1 mb 0
    gpipe.step @s1
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @b1 backward_weight @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
