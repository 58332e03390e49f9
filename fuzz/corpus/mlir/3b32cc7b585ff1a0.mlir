// gpipe-export-trace simulates the schedule and writes a Chrome/Perfetto
// trace and an SVG picture; the IR is unchanged. The schedule must pass the
// schedule verifier, whose findings are reported as by gpipe-verify-schedule. Stage 0 declares its
// durations (2 s forward, 4 s backward); stage 1 takes the defaults (1 s and
// 2 s). GPipe, K = 2, M = 2: rank 0 runs F0 [0, 2], F1 [2, 4]; rank 1 F0
// [2, 3], F1 [4, 5], B0 [5, 7], B1 [7, 9]; rank 0 B0 [7, 11], B1 [11, 15].


// TRACE:      "makespan_s": 15.0
// TRACE:      "name": "rank 0 (stage 0)"
// TRACE:      "name": "rank 1 (stage 1)"
// TRACE:      "cat": "forward",
// TRACE-NEXT: "dur": 2000000.0,
// TRACE-NEXT: "name": "F0",
// TRACE-NEXT: "ph": "X",
// TRACE-NEXT: "pid": 0,
// TRACE-NEXT: "tid": 0,
// TRACE-NEXT: "ts": 0.0
// TRACE:      "bytes": 128,
// TRACE-NEXT: "dtype": "f32",
// TRACE:      "name": "SEND_F0",

// SVG: <svg xmlns="http://www.w3.org/2000/svg"
// SVG: 2 stages, 2 micro-batches on 2 ranks: makespan 15 s
// SVG: rank 1 (stage 1)

// UNSCHEDULED: error: pipeline @train has no programs to verify; run gpipe-schedule or gpipe-import-schedule first
// NOFILE: error: gpipe-export-trace needs file=<trace.json> and/or svg=<picture.svg>
// INVALID: error: stage 0 micro-batch 0 has no backward

gpipe.pipeline @train stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
}
gpipe.stage @s0 index 0 : tensor<4x16xf32> -> tensor<4x8xf32> forward @f0 backward @b0 {forward_time = 2.0 : f64, backward_time = 4.0 : f64}
gpipe.stage @s1 index 1 : tensor<4x8xf32> -> tensor<f32> forward @f1 backward @b1
func.func private @f0(tensor<4x16xf32>) -> tensor<4x8xf32>
func.func private @b0(tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
func.func private @f1(tensor<4x8xf32>) -> tensor<f32>
func.func private @b1(tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
