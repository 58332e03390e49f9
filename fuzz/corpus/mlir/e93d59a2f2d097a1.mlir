// expected-error @+1 {{pipeline @already_scheduled is already scheduled; gpipe-schedule fills only pipelines with an empty body}}
gpipe.pipeline @already_scheduled stages [@s0] microbatches 1 schedule gpipe remat stage {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
