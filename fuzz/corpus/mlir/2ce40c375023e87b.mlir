// 1F1B, K = 2, M = 2: stage 0 warms up with K - 1 = 1 forward, so its order
// is that of GPipe; the last stage alternates F0 B0 F1 B1. The activation of
// micro-batch 1 is received before B0: it is sent as soon as rank 0 has
// produced it.

gpipe.pipeline @one_f_one_b_two_stages_two_microbatches stages [@s0, @s1] microbatches 2 schedule "1f1b" remat stage {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
