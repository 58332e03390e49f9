// 1F1B, K = 3, M = 4: stage k warms up with K - k - 1 forwards, then
// alternates, then drains (compute actions only checked here).

gpipe.pipeline @one_f_one_b_three_stages_four_microbatches stages [@a, @b, @c] microbatches 4 schedule "1f1b" remat stage {
}
gpipe.stage @a index 0 : tensor<2xf32> -> tensor<2xf32> forward @f backward @g
gpipe.stage @b index 1 : tensor<2xf32> -> tensor<2xf32> forward @f backward @g
gpipe.stage @c index 2 : tensor<2xf32> -> tensor<2xf32> forward @f backward @g
func.func private @f(tensor<2xf32>) -> tensor<2xf32>
func.func private @g(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
