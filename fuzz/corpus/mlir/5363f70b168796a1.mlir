gpipe.pipeline @recv_gradient_payload_mismatch stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
  gpipe.program rank 0 {
    // expected-error @+1 {{'gpipe.recv' op expected payload 'tensor<4x8xf32>' (the output type of stage @s0), got 'tensor<4x16xf32>'}}
    gpipe.recv @s0 mb 0 backward from 1 : tensor<4x16xf32>
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
