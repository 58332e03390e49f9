// gpipe-schedule fills empty pipelines with generated per-rank programs: the
// exact action order per rank, sends and receives placed where the
// simulated producer ends (an activation crosses a boundary before the
// gradient that depends on it), backwards in micro-batch order. Every
// periodic run of a program is a `gpipe.for` loop over micro-batches (GPipe:
// a forward loop and a backward loop; 1F1B: warm-up, steady state and
// cool-down), so the programs below are whole and the size of a program
// does not grow with M (see the M = 64 case at the end).

// BADOPT: for the --schedule option: unknown schedule 'interleaved' (expected gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-h2, zbv, dualpipev, zb-auto, v-half or v-min)

// GPipe fill-drain, K = 2, M = 2: all forwards, then all backwards.


// With schedule=1f1b the option wins and the attribute is rewritten.
// OVERRIDE-LABEL: gpipe.pipeline @gpipe_two_stages_two_microbatches stages [@s0, @s1] microbatches 2 schedule "1f1b" remat stage {
// OVERRIDE:         gpipe.program rank 1 {
// OVERRIDE-NEXT:      gpipe.recv @s1 mb 0 forward from 0 : tensor<4x8xf32>
// OVERRIDE-NEXT:      gpipe.forward @s1 mb 0
// OVERRIDE-NEXT:      gpipe.recv @s1 mb 1 forward from 0 : tensor<4x8xf32>
// OVERRIDE-NEXT:      gpipe.backward @s1 mb 0
gpipe.pipeline @gpipe_two_stages_two_microbatches stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
