// A custom schedule cannot be generated, unless the option names a family.
// OVERRIDE-LABEL: gpipe.pipeline @custom_without_option stages [@s0, @s1] microbatches 1 schedule "1f1b" remat stage {
// OVERRIDE-NEXT:    gpipe.program rank 0 {
// expected-error @+1 {{pipeline @custom_without_option has schedule custom, which gpipe-schedule cannot generate; import one with gpipe-import-schedule or pass schedule=gpipe or schedule=1f1b}}
gpipe.pipeline @custom_without_option stages [@s0, @s1] microbatches 1 schedule custom remat stage {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
