func.func @stage_in_function() {
  // expected-error @+1 {{'gpipe.stage' op expects parent op 'builtin.module'}}
  gpipe.stage @nested index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
  return
}
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
