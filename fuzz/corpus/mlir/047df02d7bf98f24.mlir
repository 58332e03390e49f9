// Larger pipelines: both families pass the schedule verifier (RUN line 1).

gpipe.pipeline @gpipe_four_stages_eight_microbatches stages [@a, @b, @c, @d] microbatches 8 schedule gpipe remat stage {
}
gpipe.pipeline @one_f_one_b_four_stages_eight_microbatches stages [@a, @b, @c, @d] microbatches 8 schedule "1f1b" remat stage {
}
gpipe.stage @a index 0 : tensor<2x4xi64> -> tensor<2x4x8xf32> forward @fa backward @ba
gpipe.stage @b index 1 : tensor<2x4x8xf32> -> tensor<2x4x8xbf16> forward @fb backward @bb
gpipe.stage @c index 2 : tensor<2x4x8xbf16> -> tensor<2x4x8xbf16> forward @fc backward @bc
gpipe.stage @d index 3 : tensor<2x4x8xbf16> -> tensor<f32> forward @fd backward @bd
func.func private @fa(tensor<2x4xi64>) -> tensor<2x4x8xf32>
func.func private @ba(tensor<2x4xi64>, tensor<2x4x8xf32>) -> tensor<10x8xf32>
func.func private @fb(tensor<2x4x8xf32>) -> tensor<2x4x8xbf16>
func.func private @bb(tensor<2x4x8xf32>, tensor<2x4x8xbf16>) -> tensor<2x4x8xf32>
func.func private @fc(tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16>
func.func private @bc(tensor<2x4x8xbf16>, tensor<2x4x8xbf16>) -> tensor<2x4x8xbf16>
func.func private @fd(tensor<2x4x8xbf16>, tensor<2x4xi64>) -> tensor<f32>
func.func private @bd(tensor<2x4x8xbf16>, tensor<2x4xi64>, tensor<f32>) -> tensor<2x4x8xbf16>
