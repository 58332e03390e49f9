gpipe.pipeline @recv_forward_on_first_stage stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    // expected-error @+1 {{'gpipe.recv' op receives an activation on the first stage @s0}}
    gpipe.recv @s0 mb 0 forward from 1 : tensor<4x16xf32>
  }
  gpipe.program rank 1 {
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
