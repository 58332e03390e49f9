// RUN: gpipe-opt %s -split-input-file -verify-diagnostics --gpipe-schedule --gpipe-verify-schedule | FileCheck %s
// RUN: not gpipe-opt %s -split-input-file --gpipe-schedule=schedule=1f1b 2>/dev/null | FileCheck %s --check-prefix=OVERRIDE
// RUN: not gpipe-opt %s -split-input-file --gpipe-schedule=schedule=interleaved 2>&1 | FileCheck %s --check-prefix=BADOPT

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

// CHECK-LABEL: gpipe.pipeline @gpipe_two_stages_two_microbatches stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
// CHECK-NEXT:    gpipe.program rank 0 {
// CHECK-NEXT:      gpipe.for %mb = 0 to 2 {
// CHECK-NEXT:        gpipe.forward @s0 mb %mb
// CHECK-NEXT:        gpipe.send @s0 mb %mb forward to 1 : tensor<4x8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.for %mb = 0 to 2 {
// CHECK-NEXT:        gpipe.recv @s0 mb %mb backward from 1 : tensor<4x8xf32>
// CHECK-NEXT:        gpipe.backward @s0 mb %mb
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.step @s0
// CHECK-NEXT:    }
// CHECK-NEXT:    gpipe.program rank 1 {
// CHECK-NEXT:      gpipe.for %mb = 0 to 2 {
// CHECK-NEXT:        gpipe.recv @s1 mb %mb forward from 0 : tensor<4x8xf32>
// CHECK-NEXT:        gpipe.forward @s1 mb %mb
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.for %mb = 0 to 2 {
// CHECK-NEXT:        gpipe.backward @s1 mb %mb
// CHECK-NEXT:        gpipe.send @s1 mb %mb backward to 0 : tensor<4x8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.step @s1
// CHECK-NEXT:    }
// CHECK-NEXT:  }

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

// -----

// 1F1B, K = 2, M = 2: stage 0 warms up with K - 1 = 1 forward, so its order
// is that of GPipe; the last stage alternates F0 B0 F1 B1. The activation of
// micro-batch 1 is received before B0: it is sent as soon as rank 0 has
// produced it.

// CHECK-LABEL: gpipe.pipeline @one_f_one_b_two_stages_two_microbatches stages [@s0, @s1] microbatches 2 schedule "1f1b" remat stage {
// CHECK-NEXT:    gpipe.program rank 0 {
// CHECK-NEXT:      gpipe.for %mb = 0 to 2 {
// CHECK-NEXT:        gpipe.forward @s0 mb %mb
// CHECK-NEXT:        gpipe.send @s0 mb %mb forward to 1 : tensor<4x8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.for %mb = 0 to 2 {
// CHECK-NEXT:        gpipe.recv @s0 mb %mb backward from 1 : tensor<4x8xf32>
// CHECK-NEXT:        gpipe.backward @s0 mb %mb
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.step @s0
// CHECK-NEXT:    }
// CHECK-NEXT:    gpipe.program rank 1 {
// CHECK-NEXT:      gpipe.recv @s1 mb 0 forward from 0 : tensor<4x8xf32>
// CHECK-NEXT:      gpipe.forward @s1 mb 0
// CHECK-NEXT:      gpipe.recv @s1 mb 1 forward from 0 : tensor<4x8xf32>
// CHECK-NEXT:      gpipe.backward @s1 mb 0
// CHECK-NEXT:      gpipe.send @s1 mb 0 backward to 0 : tensor<4x8xf32>
// CHECK-NEXT:      gpipe.forward @s1 mb 1
// CHECK-NEXT:      gpipe.backward @s1 mb 1
// CHECK-NEXT:      gpipe.send @s1 mb 1 backward to 0 : tensor<4x8xf32>
// CHECK-NEXT:      gpipe.step @s1
// CHECK-NEXT:    }
// CHECK-NEXT:  }
gpipe.pipeline @one_f_one_b_two_stages_two_microbatches stages [@s0, @s1] microbatches 2 schedule "1f1b" remat stage {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// 1F1B, K = 3, M = 4: stage k warms up with K - k - 1 forwards, then
// alternates, then drains (compute actions only checked here).

// CHECK-LABEL: gpipe.pipeline @one_f_one_b_three_stages_four_microbatches stages [@a, @b, @c] microbatches 4 schedule "1f1b" remat stage {
// CHECK-NEXT:    gpipe.program rank 0 {
// CHECK-NEXT:      gpipe.for %mb = 0 to 3 {
// CHECK-NEXT:        gpipe.forward @a mb %mb
// CHECK-NEXT:        gpipe.send @a mb %mb forward to 1 : tensor<2xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.recv @a mb 0 backward from 1 : tensor<2xf32>
// CHECK-NEXT:      gpipe.backward @a mb 0
// CHECK-NEXT:      gpipe.forward @a mb 3
// CHECK-NEXT:      gpipe.send @a mb 3 forward to 1 : tensor<2xf32>
// CHECK-NEXT:      gpipe.for %mb = 1 to 4 {
// CHECK-NEXT:        gpipe.recv @a mb %mb backward from 1 : tensor<2xf32>
// CHECK-NEXT:        gpipe.backward @a mb %mb
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.step @a
// CHECK-NEXT:    }
// CHECK-NEXT:    gpipe.program rank 1 {
// CHECK-NEXT:      gpipe.recv @b mb 0 forward from 0 : tensor<2xf32>
// CHECK-NEXT:      gpipe.for %mb = 0 to 2 {
// CHECK-NEXT:        gpipe.forward @b mb %mb
// CHECK-NEXT:        gpipe.recv @b mb %mb + 1 forward from 0 : tensor<2xf32>
// CHECK-NEXT:        gpipe.send @b mb %mb forward to 2 : tensor<2xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.recv @b mb 0 backward from 2 : tensor<2xf32>
// CHECK-NEXT:      gpipe.backward @b mb 0
// CHECK-NEXT:      gpipe.send @b mb 0 backward to 0 : tensor<2xf32>
// CHECK-NEXT:      gpipe.forward @b mb 2
// CHECK-NEXT:      gpipe.send @b mb 2 forward to 2 : tensor<2xf32>
// CHECK-NEXT:      gpipe.recv @b mb 1 backward from 2 : tensor<2xf32>
// CHECK-NEXT:      gpipe.backward @b mb 1
// CHECK-NEXT:      gpipe.recv @b mb 3 forward from 0 : tensor<2xf32>
// CHECK-NEXT:      gpipe.send @b mb 1 backward to 0 : tensor<2xf32>
// CHECK-NEXT:      gpipe.forward @b mb 3
// CHECK-NEXT:      gpipe.send @b mb 3 forward to 2 : tensor<2xf32>
// CHECK-NEXT:      gpipe.for %mb = 2 to 4 {
// CHECK-NEXT:        gpipe.recv @b mb %mb backward from 2 : tensor<2xf32>
// CHECK-NEXT:        gpipe.backward @b mb %mb
// CHECK-NEXT:        gpipe.send @b mb %mb backward to 0 : tensor<2xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.step @b
// CHECK-NEXT:    }
// CHECK-NEXT:    gpipe.program rank 2 {
// CHECK-NEXT:      gpipe.recv @c mb 0 forward from 1 : tensor<2xf32>
// CHECK-NEXT:      gpipe.forward @c mb 0
// CHECK-NEXT:      gpipe.recv @c mb 1 forward from 1 : tensor<2xf32>
// CHECK-NEXT:      gpipe.backward @c mb 0
// CHECK-NEXT:      gpipe.for %mb = 0 to 2 {
// CHECK-NEXT:        gpipe.send @c mb %mb backward to 1 : tensor<2xf32>
// CHECK-NEXT:        gpipe.forward @c mb %mb + 1
// CHECK-NEXT:        gpipe.backward @c mb %mb + 1
// CHECK-NEXT:        gpipe.recv @c mb %mb + 2 forward from 1 : tensor<2xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.send @c mb 2 backward to 1 : tensor<2xf32>
// CHECK-NEXT:      gpipe.forward @c mb 3
// CHECK-NEXT:      gpipe.backward @c mb 3
// CHECK-NEXT:      gpipe.send @c mb 3 backward to 1 : tensor<2xf32>
// CHECK-NEXT:      gpipe.step @c
// CHECK-NEXT:    }
// CHECK-NEXT:  }
gpipe.pipeline @one_f_one_b_three_stages_four_microbatches stages [@a, @b, @c] microbatches 4 schedule "1f1b" remat stage {
}
gpipe.stage @a index 0 : tensor<2xf32> -> tensor<2xf32> forward @f backward @g
gpipe.stage @b index 1 : tensor<2xf32> -> tensor<2xf32> forward @f backward @g
gpipe.stage @c index 2 : tensor<2xf32> -> tensor<2xf32> forward @f backward @g
func.func private @f(tensor<2xf32>) -> tensor<2xf32>
func.func private @g(tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>

// -----

// Larger pipelines: both families pass the schedule verifier (RUN line 1).

// CHECK-LABEL: gpipe.pipeline @gpipe_four_stages_eight_microbatches
// CHECK-LABEL: gpipe.pipeline @one_f_one_b_four_stages_eight_microbatches
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

// -----

// One stage: nothing to send.

// CHECK-LABEL: gpipe.pipeline @single_stage stages [@s0] microbatches 2 schedule gpipe remat none {
// CHECK-NEXT:    gpipe.program rank 0 {
// CHECK-NEXT:      gpipe.for %mb = 0 to 2 {
// CHECK-NEXT:        gpipe.forward @s0 mb %mb
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.for %mb = 0 to 2 {
// CHECK-NEXT:        gpipe.backward @s0 mb %mb
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.step @s0
// CHECK-NEXT:    }
// CHECK-NEXT:  }
gpipe.pipeline @single_stage stages [@s0] microbatches 2 schedule gpipe remat none {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// expected-error @+1 {{pipeline @already_scheduled is already scheduled; gpipe-schedule fills only pipelines with an empty body}}
gpipe.pipeline @already_scheduled stages [@s0] microbatches 1 schedule gpipe remat stage {
  gpipe.program rank 0 {
    gpipe.forward @s0 mb 0
  }
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

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

// -----

// M = 64: the same loops as M = 2 with other trip counts; the 1F1B steady
// state is one loop.

// CHECK-LABEL: gpipe.pipeline @gpipe_sixty_four
// CHECK:         gpipe.program rank 0 {
// CHECK-NEXT:      gpipe.for %mb = 0 to 64 {
// CHECK-NEXT:        gpipe.forward @s0 mb %mb
// CHECK-NEXT:        gpipe.send @s0 mb %mb forward to 1 : tensor<4x8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.for %mb = 0 to 64 {
// CHECK-NEXT:        gpipe.recv @s0 mb %mb backward from 1 : tensor<4x8xf32>
// CHECK-NEXT:        gpipe.backward @s0 mb %mb
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.step @s0
// CHECK-NEXT:    }
gpipe.pipeline @gpipe_sixty_four stages [@s0, @s1] microbatches 64 schedule gpipe remat stage {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>

// -----

// CHECK-LABEL: gpipe.pipeline @one_f_one_b_sixty_four
// CHECK:         gpipe.program rank 0 {
// CHECK-NEXT:      gpipe.for %mb = 0 to 2 {
// CHECK-NEXT:        gpipe.forward @s0 mb %mb
// CHECK-NEXT:        gpipe.send @s0 mb %mb forward to 1 : tensor<4x8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.for %mb = 0 to 62 {
// CHECK-NEXT:        gpipe.recv @s0 mb %mb backward from 1 : tensor<4x8xf32>
// CHECK-NEXT:        gpipe.backward @s0 mb %mb
// CHECK-NEXT:        gpipe.forward @s0 mb %mb + 2
// CHECK-NEXT:        gpipe.send @s0 mb %mb + 2 forward to 1 : tensor<4x8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.for %mb = 62 to 64 {
// CHECK-NEXT:        gpipe.recv @s0 mb %mb backward from 1 : tensor<4x8xf32>
// CHECK-NEXT:        gpipe.backward @s0 mb %mb
// CHECK-NEXT:      }
// CHECK-NEXT:      gpipe.step @s0
// CHECK-NEXT:    }
gpipe.pipeline @one_f_one_b_sixty_four stages [@s0, @s1] microbatches 64 schedule "1f1b" remat stage {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
