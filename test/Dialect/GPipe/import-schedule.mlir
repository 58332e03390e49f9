// RUN: gpipe-opt %s '--gpipe-import-schedule=file=%S/Inputs/gpipe-two-stages.csv' --gpipe-verify-schedule | FileCheck %s
// RUN: gpipe-opt %s '--gpipe-import-schedule=file=%S/Inputs/1f1b-compute-only.csv' --gpipe-verify-schedule | FileCheck %s --check-prefix=COMPUTE
// RUN: gpipe-opt %s '--gpipe-import-schedule=file=%S/Inputs/1f1b-compute-only.csv' -mlir-print-debuginfo -mlir-print-local-scope | FileCheck %s --check-prefix=LOC
// RUN: gpipe-opt %s '--gpipe-import-schedule=file=%S/Inputs/1f1b-compute-only.csv communication=keep' | FileCheck %s --check-prefix=KEEP
// RUN: gpipe-opt %S/Inputs/import-interleaved.mlir '--gpipe-import-schedule=file=%S/Inputs/interleaved-compute-only.csv' --gpipe-verify-schedule | FileCheck %s --check-prefix=INTERLEAVED
// RUN: not gpipe-opt %S/Inputs/import-single.mlir '--gpipe-import-schedule=file=%S/Inputs/deadlock.csv' --gpipe-verify-schedule 2>&1 | FileCheck %s --check-prefix=DEADLOCK
// RUN: not gpipe-opt %s '--gpipe-import-schedule=file=%S/Inputs/bad-cell.csv' 2>&1 | FileCheck %s --check-prefix=BADCELL
// RUN: not gpipe-opt %s '--gpipe-import-schedule=file=%S/Inputs/three-stages.csv' 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not gpipe-opt %s '--gpipe-import-schedule=file=%S/Inputs/three-microbatches.csv' 2>&1 | FileCheck %s --check-prefix=MICROBATCHES
// RUN: not gpipe-opt %s '--gpipe-import-schedule=file=%S/Inputs/stage-on-two-ranks.csv' 2>&1 | FileCheck %s --check-prefix=TWORANKS
// RUN: not gpipe-opt %s '--gpipe-import-schedule=file=%S/Inputs/send-to-own-rank.csv' 2>&1 | FileCheck %s --check-prefix=OWNRANK
// RUN: not gpipe-opt %s '--gpipe-import-schedule=file=%S/Inputs/no-such-file.csv' 2>&1 | FileCheck %s --check-prefix=NOFILE
// RUN: cat %s %S/Inputs/import-interleaved.mlir | not gpipe-opt - '--gpipe-import-schedule=file=%S/Inputs/gpipe-two-stages.csv' 2>&1 | FileCheck %s --check-prefix=WHICH
// RUN: cat %s %S/Inputs/import-interleaved.mlir | gpipe-opt - '--gpipe-import-schedule=file=%S/Inputs/gpipe-two-stages.csv pipeline=train' | FileCheck %s --check-prefix=NAMED
// RUN: not gpipe-opt %s --gpipe-import-schedule 2>&1 | FileCheck %s --check-prefix=NOOPTION
// RUN: not gpipe-opt %s '--gpipe-import-schedule=file=%S/Inputs/gpipe-two-stages.csv communication=maybe' 2>&1 | FileCheck %s --check-prefix=BADMODE

// gpipe-import-schedule makes a PyTorch-format CSV schedule the programs of a
// pipeline, whose schedule becomes custom; gpipe-verify-schedule then checks
// it, pointing into the CSV.

// A complete CSV (GPipe, K = 2, M = 2, with transfers and steps) comes in
// exactly as written.
// CHECK-LABEL: gpipe.pipeline @train stages [@s0, @s1] microbatches 2 schedule custom remat stage {
// CHECK-NEXT:    gpipe.program rank 0 {
// CHECK-NEXT:      gpipe.forward @s0 mb 0
// CHECK-NEXT:      gpipe.send @s0 mb 0 forward to 1 : tensor<4x8xf32>
// CHECK-NEXT:      gpipe.forward @s0 mb 1
// CHECK-NEXT:      gpipe.send @s0 mb 1 forward to 1 : tensor<4x8xf32>
// CHECK-NEXT:      gpipe.recv @s0 mb 0 backward from 1 : tensor<4x8xf32>
// CHECK-NEXT:      gpipe.backward @s0 mb 0
// CHECK-NEXT:      gpipe.recv @s0 mb 1 backward from 1 : tensor<4x8xf32>
// CHECK-NEXT:      gpipe.backward @s0 mb 1
// CHECK-NEXT:      gpipe.step @s0
// CHECK-NEXT:    }
// CHECK-NEXT:    gpipe.program rank 1 {
// CHECK-NEXT:      gpipe.recv @s1 mb 0 forward from 0 : tensor<4x8xf32>
// CHECK-NEXT:      gpipe.forward @s1 mb 0
// CHECK-NEXT:      gpipe.recv @s1 mb 1 forward from 0 : tensor<4x8xf32>
// CHECK-NEXT:      gpipe.forward @s1 mb 1
// CHECK-NEXT:      gpipe.backward @s1 mb 0
// CHECK-NEXT:      gpipe.send @s1 mb 0 backward to 0 : tensor<4x8xf32>
// CHECK-NEXT:      gpipe.backward @s1 mb 1
// CHECK-NEXT:      gpipe.send @s1 mb 1 backward to 0 : tensor<4x8xf32>
// CHECK-NEXT:      gpipe.step @s1
// CHECK-NEXT:    }
// CHECK-NEXT:  }

// PyTorch's compute-only form (1F1B, idle slots as empty cells, no steps):
// transfers are placed as gpipe-schedule places them, steps appended.
// COMPUTE-LABEL: gpipe.pipeline @train stages [@s0, @s1] microbatches 2 schedule custom remat stage {
// COMPUTE-NEXT:    gpipe.program rank 0 {
// COMPUTE-NEXT:      gpipe.forward @s0 mb 0
// COMPUTE-NEXT:      gpipe.send @s0 mb 0 forward to 1 : tensor<4x8xf32>
// COMPUTE-NEXT:      gpipe.forward @s0 mb 1
// COMPUTE-NEXT:      gpipe.send @s0 mb 1 forward to 1 : tensor<4x8xf32>
// COMPUTE-NEXT:      gpipe.recv @s0 mb 0 backward from 1 : tensor<4x8xf32>
// COMPUTE-NEXT:      gpipe.backward @s0 mb 0
// COMPUTE-NEXT:      gpipe.recv @s0 mb 1 backward from 1 : tensor<4x8xf32>
// COMPUTE-NEXT:      gpipe.backward @s0 mb 1
// COMPUTE-NEXT:      gpipe.step @s0
// COMPUTE-NEXT:    }
// COMPUTE-NEXT:    gpipe.program rank 1 {
// COMPUTE-NEXT:      gpipe.recv @s1 mb 0 forward from 0 : tensor<4x8xf32>
// COMPUTE-NEXT:      gpipe.forward @s1 mb 0
// COMPUTE-NEXT:      gpipe.recv @s1 mb 1 forward from 0 : tensor<4x8xf32>
// COMPUTE-NEXT:      gpipe.backward @s1 mb 0
// COMPUTE-NEXT:      gpipe.send @s1 mb 0 backward to 0 : tensor<4x8xf32>
// COMPUTE-NEXT:      gpipe.forward @s1 mb 1
// COMPUTE-NEXT:      gpipe.backward @s1 mb 1
// COMPUTE-NEXT:      gpipe.send @s1 mb 1 backward to 0 : tensor<4x8xf32>
// COMPUTE-NEXT:      gpipe.step @s1
// COMPUTE-NEXT:    }
// COMPUTE-NEXT:  }

// Each imported action is located at its cell (1-based character column,
// inside quotes); placed transfers and appended steps at their rank's line.
// LOC-LABEL:  gpipe.program rank 0 {
// LOC-NEXT:     gpipe.forward @s0 mb 0 loc("{{.*}}1f1b-compute-only.csv":1:1)
// LOC-NEXT:     gpipe.send @s0 mb 0 forward to 1 : tensor<4x8xf32> loc("{{.*}}1f1b-compute-only.csv":1:1)
// LOC-NEXT:     gpipe.forward @s0 mb 1 loc("{{.*}}1f1b-compute-only.csv":1:5)
// LOC:          gpipe.backward @s0 mb 0 loc("{{.*}}1f1b-compute-only.csv":1:10)
// LOC:          gpipe.backward @s0 mb 1 loc("{{.*}}1f1b-compute-only.csv":1:14)
// LOC-NEXT:     gpipe.step @s0 loc("{{.*}}1f1b-compute-only.csv":1:1)
// LOC-LABEL:  gpipe.program rank 1 {
// LOC-NEXT:     gpipe.recv @s1 mb 0 forward from 0 : tensor<4x8xf32> loc("{{.*}}1f1b-compute-only.csv":2:1)
// LOC-NEXT:     gpipe.forward @s1 mb 0 loc("{{.*}}1f1b-compute-only.csv":2:2)

// communication=keep imports the cells as they are.
// KEEP-LABEL: gpipe.pipeline @train
// KEEP-NOT:     gpipe.send
// KEEP-NOT:     gpipe.recv
// KEEP:       gpipe.stage @s0

// Four stages on two ranks (rank r runs stages r and r + 2): stage 1's
// activation goes from rank 1 back to rank 0.
// INTERLEAVED-LABEL: gpipe.pipeline @interleaved stages [@i0, @i1, @i2, @i3] microbatches 2 schedule custom remat stage {
// INTERLEAVED:         gpipe.program rank 0 {
// INTERLEAVED:           gpipe.recv @i2 mb 0 forward from 1 : tensor<2xf32>
// INTERLEAVED:           gpipe.step @i0
// INTERLEAVED-NEXT:      gpipe.step @i2
// INTERLEAVED:         gpipe.program rank 1 {
// INTERLEAVED:           gpipe.send @i1 mb 0 forward to 0 : tensor<2xf32>

// Verifier findings on an imported schedule point into the CSV.
// DEADLOCK:      deadlock.csv:1:6: error: deadlock: rank 0 waits for rank 1 (action 1, 0RECV_B0 from rank 1), rank 1 waits for rank 0 (action 0, 1RECV_F0 from rank 0)
// DEADLOCK-NEXT: 0F0, 0RECV_B0, 0SEND_F0, 0B0
// DEADLOCK:      deadlock.csv:2:2: note: rank 1 waits here for rank 0 (1RECV_F0 from rank 0)

// BADCELL: error: pipeline @train cannot import schedule '{{.*}}bad-cell.csv': line 1 (rank 0) column 2: unknown action type 'X' in '0X1'
// STAGES: error: pipeline @train cannot import schedule '{{.*}}three-stages.csv': line 3 (rank 2) column 1: stage 2 in '2F0' out of range for 2 stages
// MICROBATCHES: error: pipeline @train cannot import schedule '{{.*}}three-microbatches.csv': line 1 (rank 0) column 3: micro-batch 2 in '0F2' out of range for 2 micro-batches
// TWORANKS: error: pipeline @train cannot import schedule '{{.*}}stage-on-two-ranks.csv': stage 1 appears on rank 0 (line 1 column 3) and on rank 1 (line 2 column 1)
// OWNRANK: error: pipeline @train cannot hold rank 0 action 1 (0SEND_F0 to rank 0): the peer is the action's own rank; stages on one rank hand data over in memory
// NOFILE: error: pipeline @train cannot read schedule file '{{.*}}no-such-file.csv': No such file or directory
// WHICH: error: expected exactly one gpipe.pipeline, found 2; name one with pipeline=
// NAMED-LABEL: gpipe.pipeline @train stages [@s0, @s1] microbatches 2 schedule custom remat stage {
// NAMED-NEXT:    gpipe.program rank 0 {
// NAMED-LABEL: gpipe.pipeline @interleaved stages [@i0, @i1, @i2, @i3] microbatches 2 schedule gpipe remat stage {
// NAMED-NEXT:  }
// NOOPTION: error: gpipe-import-schedule needs file=<path of a CSV schedule>
// BADMODE: for the --communication option: unknown communication 'maybe' (expected auto, keep or insert)

gpipe.pipeline @train stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
