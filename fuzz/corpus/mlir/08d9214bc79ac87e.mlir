// An unscheduled pipeline: the body is empty until gpipe-schedule or
// gpipe-import-schedule fills it. "1f1b" is not a keyword and stays quoted.

gpipe.pipeline @unscheduled_1f1b stages [@only] microbatches 4 schedule "1f1b" remat none {
}
gpipe.stage @only index 0 : tensor<2x3xf32> -> tensor<f32> forward @f backward @b
func.func private @f(tensor<2x3xf32>, tensor<2xi64>) -> tensor<f32>
func.func private @b(tensor<2x3xf32>, tensor<2xi64>, tensor<f32>) -> tensor<3x3xf32>
