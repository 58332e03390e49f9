// Every verifier rule of the gpipe ops, with its exact message. Schedule-level
// rules (coverage, order, matching, deadlock) are gpipe-verify-schedule's and
// are tested in verify-schedule.mlir.

//===----------------------------------------------------------------------===//
// gpipe.stage
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'gpipe.stage' op expected a non-negative stage index, got -1}}
gpipe.stage @negative_index index -1 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
