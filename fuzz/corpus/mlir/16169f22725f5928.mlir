gpipe.pipeline @loop_past_m stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    gpipe.for %mb = 0 to 2 {
      // expected-error @+1 {{'gpipe.forward' op micro-batch 2 out of range for 2 micro-batches}}
      gpipe.forward @s0 mb %mb + 1
    }
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
