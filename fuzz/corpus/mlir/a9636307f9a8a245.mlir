// The zero-bubble split: each stage's backward also comes as an input half
// (the input gradient the previous stage waits for, then what the weight
// half needs: nn.deferred_count values) and a weight half (the backward's
// arguments, then those values; the parameter gradients). Stage 0 has no
// input gradient: its input half is empty and its weight half does it all.
// ZB-V cuts 2 ranks x 2 stages and places them V-shaped (rank 0 holds the
// first and the last stage); the planner keeps what I hands to W in a
// Deferred slot.


// The ReLU's masked gradient is computed once, by the input half, and
// handed to the weight half (its last argument) for the weight's GEMM.


// Schedules with full backwards get no halves.
// FUSED-NOT: backward_input
// FUSED: gpipe.pipeline @train stages [@train_s0, @train_s1] microbatches 2 schedule "1f1b" remat stage

// Interleaved 1F1B places stage s on rank s mod 2.
// INTERLEAVED-NOT: backward_input
// INTERLEAVED:     gpipe.pipeline @train stages [@train_s0, @train_s1, @train_s2, @train_s3] microbatches 4 schedule "interleaved-1f1b" virtual_stages 2 remat stage
// INTERLEAVED:       gpipe.program rank 0
// INTERLEAVED-NOT:   gpipe.program
// INTERLEAVED:         gpipe.step @train_s0
// INTERLEAVED-NEXT:    gpipe.step @train_s2
// INTERLEAVED:       gpipe.program rank 1
// INTERLEAVED:         gpipe.step @train_s1
// INTERLEAVED-NEXT:    gpipe.step @train_s3

// The trace and the picture show the two halves apart.
// TRACE-DAG: "name": "I0"
// TRACE-DAG: "name": "W3"
// SVG-DAG: backward input (I)
// SVG-DAG: backward weight (W)
