// expected-error @+2 {{pipeline @stage_on_no_rank runs stage @s0 on no rank: no program has an action of it}}
// expected-error @+1 {{pipeline @stage_on_no_rank runs stage @s1 on no rank: no program has an action of it}}
gpipe.pipeline @stage_on_no_rank stages [@s0, @s1] microbatches 1 schedule custom remat stage {
  gpipe.program rank 0 {
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1 backward_input @b1 backward_weight @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
