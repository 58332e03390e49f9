//===- Passes.td - gpipe dialect passes --------------------*- tablegen -*-===//
//
// Passes over `gpipe.pipeline`: generate a schedule, import one from a
// PyTorch-format CSV file, verify it, and export its simulated timeline.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_TRANSFORMS_PASSES_TD
#define GPIPE_DIALECT_GPIPE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def GPipeSchedulePass : Pass<"gpipe-schedule", "::mlir::ModuleOp"> {
  let summary = "Generate the per-rank programs of unscheduled pipelines";
  let description = [{
    Fills every `gpipe.pipeline` whose body is empty with one `gpipe.program`
    per stage (stage k on rank k): GPipe fill-drain or non-interleaved 1F1B
    compute orders, with the sends and receives placed so that the programs
    cannot deadlock under blocking rendezvous (see `insertCommunication` in
    docs/Analyses.md). Backwards run in micro-batch order in both schedules.
    The schedule family is the pipeline's `schedule` attribute, or the
    `schedule` option, which then overrides and rewrites the attribute. A
    pipeline that already has programs, or whose schedule is `custom`
    without the option, is an error.

    Before:
    ```mlir
    gpipe.pipeline @train stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
    }
    ```
    After:
    ```mlir
    gpipe.pipeline @train stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
      gpipe.program rank 0 {
        gpipe.forward @s0 mb 0
        gpipe.send @s0 mb 0 forward to 1 : tensor<8x32xf32>
        gpipe.forward @s0 mb 1
        gpipe.send @s0 mb 1 forward to 1 : tensor<8x32xf32>
        gpipe.recv @s0 mb 0 backward from 1 : tensor<8x32xf32>
        gpipe.backward @s0 mb 0
        gpipe.recv @s0 mb 1 backward from 1 : tensor<8x32xf32>
        gpipe.backward @s0 mb 1
        gpipe.step @s0
      }
      gpipe.program rank 1 {
        gpipe.recv @s1 mb 0 forward from 0 : tensor<8x32xf32>
        gpipe.forward @s1 mb 0
        gpipe.recv @s1 mb 1 forward from 0 : tensor<8x32xf32>
        gpipe.forward @s1 mb 1
        gpipe.backward @s1 mb 0
        gpipe.send @s1 mb 0 backward to 0 : tensor<8x32xf32>
        gpipe.backward @s1 mb 1
        gpipe.send @s1 mb 1 backward to 0 : tensor<8x32xf32>
        gpipe.step @s1
      }
    }
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::GPipeDialect"];
  let options = [
    Option<"schedule", "schedule", "::mlir::gpipe::ScheduleKind",
           /*default=*/"::mlir::gpipe::ScheduleKind::Custom",
           "`gpipe` or `1f1b`; empty: each pipeline's `schedule` attribute",
           "::mlir::gpipe::getScheduleKindValues(), ::llvm::cl::values("
           "clEnumValN(::mlir::gpipe::ScheduleKind::Custom, \"\", "
           "\"each pipeline's own schedule attribute\"))">,
  ];
}

def GPipeExpandProgramsPass : Pass<"gpipe-expand-programs",
                                   "::mlir::ModuleOp"> {
  let summary = "Unroll the micro-batch loops of every rank's program";
  let description = [{
    Replaces every `gpipe.for` of every `gpipe.program` by its iterations:
    one action op per action the rank runs, each with a constant
    micro-batch, in the order the rank runs them (the same expansion the
    verifier, the timeline and the memory planner read programs through).
    For reading a schedule action by action, or for tools that want it flat;
    the compiler itself keeps the loops. Drops the programs' arenas: a
    planned program expanded must be planned again.

    ```mlir
    gpipe.for %mb = 0 to 2 {
      gpipe.forward @s0 mb %mb
    }
    // becomes
    gpipe.forward @s0 mb 0
    gpipe.forward @s0 mb 1
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::GPipeDialect"];
}

def GPipeVerifySchedulePass : Pass<"gpipe-verify-schedule",
                                   "::mlir::ModuleOp"> {
  let summary = "Prove every pipeline's schedule complete and deadlock-free";
  let description = [{
    Converts each `gpipe.pipeline`'s programs to a plain schedule and runs the
    schedule verifier (docs/Analyses.md): every (stage, micro-batch) has one
    forward and one backward (or one `backward_input` plus one
    `backward_weight`) on its stage's rank, receives precede their consumers
    and sends follow their producers, every send has exactly one matching
    receive with the peer of the neighbouring stage, steps come last, and a
    simulation with blocking rendezvous sends and receives finishes every
    rank. Each finding is an error at the action it names, with the
    verifier's text; a deadlock is reported at the first action of its wait
    cycle with a note at every other action of the cycle. Findings that name
    no action are reported at the pipeline. The IR is not changed; a
    pipeline without programs, or with a stage no program names, is an
    error.

    ```mlir
    gpipe.program rank 0 {
      gpipe.forward @s0 mb 0
      // error: rank 0 action 1 (0SEND_F0 to rank 1) has no matching receive (no 1RECV_F0 on rank 1)
      gpipe.send @s0 mb 0 forward to 1 : tensor<8x32xf32>
      ...
    }
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::GPipeDialect"];
}

def GPipeImportSchedulePass : Pass<"gpipe-import-schedule",
                                   "::mlir::ModuleOp"> {
  let summary = "Replace a pipeline's programs with a PyTorch-format CSV schedule";
  let description = [{
    Reads a schedule in the CSV format of PyTorch's pipelining schedules
    (one line per rank, cells `<stage><TYPE>[<mb>]` such as `0F1`,
    `1SEND_F0`, `0RECV_B2`, `1STEP`; empty cells are idle slots) and makes it
    the programs of the pipeline (the module's only one, or the one `pipeline`
    names), whose `schedule` becomes `custom`. Stage numbers index the
    pipeline's `stages`; which rank runs a stage follows from the line it
    appears on; peers and payload types follow from that and the stage
    declarations. A stage without a `STEP` cell (PyTorch's schedules have
    none) gets its step at the end of its rank's program. With
    `communication=auto` (the default) a CSV without any
    send or receive (PyTorch's compute-only form) gets its sends and
    receives placed as `gpipe-schedule` places them; `keep` imports the cells
    as they are and `insert` always replaces the transfers. Each imported
    action's location is its cell (`file:line:column`), so
    `gpipe-verify-schedule` points into the CSV. The schedule is not verified
    here: run `gpipe-verify-schedule` next.

    Errors, at the pipeline: an unreadable file; a malformed cell, an unknown
    action type, a stage or micro-batch out of range for the pipeline's K and
    M, a stage on two lines (each naming line and column); an action the IR
    cannot hold (a transfer between two stages on one rank).

    Input (`two_stages.csv`, K = 2, M = 1):
    ```
    0F0,0SEND_F0,0RECV_B0,0B0,0STEP
    1RECV_F0,1F0,1B0,1SEND_B0,1STEP
    ```
    Result:
    ```mlir
    gpipe.pipeline @train stages [@s0, @s1] microbatches 1 schedule custom remat stage {
      gpipe.program rank 0 {
        gpipe.forward @s0 mb 0
        gpipe.send @s0 mb 0 forward to 1 : tensor<8x32xf32>
        gpipe.recv @s0 mb 0 backward from 1 : tensor<8x32xf32>
        gpipe.backward @s0 mb 0
        gpipe.step @s0
      }
      gpipe.program rank 1 {
        gpipe.recv @s1 mb 0 forward from 0 : tensor<8x32xf32>
        gpipe.forward @s1 mb 0
        gpipe.backward @s1 mb 0
        gpipe.send @s1 mb 0 backward to 0 : tensor<8x32xf32>
        gpipe.step @s1
      }
    }
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::GPipeDialect"];
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"\"",
           "Path of the CSV schedule to import">,
    Option<"pipeline", "pipeline", "std::string", /*default=*/"\"\"",
           "Name of the pipeline to schedule; empty: the module's only one">,
    Option<"communication", "communication", "::mlir::gpipe::CommunicationMode",
           /*default=*/"::mlir::gpipe::CommunicationMode::Auto",
           "`auto`: place sends and receives when the CSV has none; `keep`: "
           "import the cells as they are; `insert`: always place them anew",
           "::mlir::gpipe::getCommunicationModeValues()">,
  ];
}

def GPipeExportTracePass : Pass<"gpipe-export-trace", "::mlir::ModuleOp"> {
  let summary = "Simulate a pipeline's schedule and write its timeline";
  let description = [{
    Simulates the programs of the pipeline (the module's only one, or the
    one `pipeline` names) with per-stage durations and writes the predicted
    timeline as a Chrome/Perfetto trace (`file`, JSON: one track per rank,
    flow arrows from each send to its receive) and/or an SVG picture (`svg`).
    Durations are the stages' `forward_time` and `backward_time` attributes
    where present, else 1 for a forward (and recompute) and 2 for a backward
    (each split half 1); transfers take no time. The schedule must pass the
    schedule verifier. The IR is not changed.

    ```mlir
    // gpipe-opt --gpipe-schedule '--gpipe-export-trace=file=trace.json svg=trace.svg' model.mlir
    gpipe.stage @s0 index 0 : tensor<8x16xf32> -> tensor<8x32xf32> forward @f0 backward @b0 {forward_time = 2.0e-03 : f64, backward_time = 4.0e-03 : f64}
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::GPipeDialect"];
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"\"",
           "Path of the Chrome trace (JSON) to write">,
    Option<"svg", "svg", "std::string", /*default=*/"\"\"",
           "Path of the SVG picture to write">,
    Option<"pipeline", "pipeline", "std::string", /*default=*/"\"\"",
           "Name of the pipeline to simulate; empty: the module's only one">,
  ];
}

def GPipePartitionPass : Pass<"gpipe-partition", "::mlir::ModuleOp"> {
  let summary = "Cut a layered network into K pipeline stages";
  let description = [{
    Takes the network function (`func`, default `forward`): a chain of
    `nn.layer` ops (`nn-form-layers`) on one micro-batch (`nn-microbatch`),
    optionally followed by a loss on a trailing labels argument
    (`nn-attach-loss`). It estimates each layer's time with the cost model
    (`profile`: `cpu`, `h200` or `h200-bf16`), finds the partition into
    `stages` contiguous stages that minimizes the slowest stage (boundary
    transfers included) under `memory-budget`, or takes the manual
    `balance`, and builds:

    - per stage, `@<pipeline>_s<k>_fwd` (its layers on one micro-batch; the
      last stage also takes the labels and returns the loss) and
      `@<pipeline>_s<k>_bwd` (recompute + reverse mode, `nn-differentiate`'s
      contract; the last stage's seed is scaled by 1/M so that the M
      accumulated micro-batch gradients equal the mini-batch gradient); with
      `remat=none` the forward also returns the activations the backward
      reads (`nn.saved_count`) and the backward takes them after the
      forward's arguments instead of recomputing;
    - `gpipe.stage @<pipeline>_s<k>` declarations with the estimated times;
    - an empty `gpipe.pipeline @<pipeline>` for `gpipe-schedule`.

    With `forward-only` (inference; the network has no loss attached) it
    builds the forwards alone, the last one returning the network's
    prediction, stages without `backward` and a `forward_only` pipeline with
    remat `none`; the partition balances the forward times.

    The network function is kept as the sequential reference.

    Before (abridged):
    ```mlir
    func.func @forward(%x: tensor<2x16xf32>, %labels: tensor<2xi64>) -> tensor<f32> {
      %0 = nn.layer "0"(%x) ... %1 = nn.layer "2"(%0) ...
      %loss = nn.cross_entropy %1, %labels ...
    }
    ```
    After `--gpipe-partition=stages=2 microbatches=4`:
    ```mlir
    func.func @train_s0_fwd(%x: tensor<2x16xf32>) -> tensor<2x32xf32>
    func.func @train_s0_bwd(%x: tensor<2x16xf32>, %dy: tensor<2x32xf32>) -> (tensor<2x16xf32>, ...)
    func.func @train_s1_fwd(%h: tensor<2x32xf32>, %labels: tensor<2xi64>) -> tensor<f32>
    func.func @train_s1_bwd(%h: tensor<2x32xf32>, %labels: tensor<2xi64>, %dl: tensor<f32>) -> (tensor<2x32xf32>, ...)
    gpipe.stage @train_s0 index 0 : tensor<2x16xf32> -> tensor<2x32xf32> forward @train_s0_fwd backward @train_s0_bwd
    gpipe.stage @train_s1 index 1 : tensor<2x32xf32> -> tensor<f32> forward @train_s1_fwd backward @train_s1_bwd
    gpipe.pipeline @train stages [@train_s0, @train_s1] microbatches 4 schedule gpipe remat stage {
    }
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::GPipeDialect",
                           "::mlir::gpipe::nn::NNDialect",
                           "::mlir::func::FuncDialect"];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"1",
           "Number of pipeline stages K">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"1",
           "Number of micro-batches M per mini-batch">,
    Option<"schedule", "schedule", "::mlir::gpipe::ScheduleKind",
           /*default=*/"::mlir::gpipe::ScheduleKind::GPipe",
           "Schedule family recorded on the pipeline",
           "::mlir::gpipe::getScheduleKindValues()">,
    Option<"remat", "remat", "::mlir::gpipe::Remat",
           /*default=*/"::mlir::gpipe::Remat::Stage",
           "Re-materialization policy: stage, none or selective",
           "::mlir::gpipe::getRematValues()">,
    ListOption<"recomputeLayers", "recompute-layers", "std::string",
               "remat=selective: the layers (by name) whose activations the "
               "backward recomputes; every other layer's are kept">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"0",
           "Stages per rank V: the network is cut into stages x V stages "
           "(0: the schedule's own, 2 for interleaved-1f1b, zbv and "
           "dualpipev, v-half and v-min, else 1)">,
    Option<"dataParallel", "data-parallel", "int64_t", /*default=*/"1",
           "Replicas D of the pipeline (data parallelism): the network "
           "holds one replica's micro-batch (nn-microbatch by M x D), each "
           "micro-batch's loss is scaled by 1/(M x D) and the stages' "
           "gradients are summed over the replicas">,
    Option<"clipGradNorm", "clip-grad-norm", "double", /*default=*/"0.0",
           "Clip the gradients to this global L2 norm before each update "
           "(the pipeline's clip_grad_norm; 0: no clipping)">,
    Option<"splitBackward", "split-backward", "bool", /*default=*/"false",
           "Also build each stage's backward in two halves (input gradient, "
           "weight gradient); implied by the zero-bubble schedules">,
    ListOption<"balance", "balance", "int64_t",
               "Layers per stage (manual partition); overrides the search">,
    Option<"memoryBudget", "memory-budget", "std::string", /*default=*/"\"\"",
           "Per-stage memory cap, e.g. 16GiB; none when not given (given "
           "empty is an error)">,
    Option<"profile", "profile", "::mlir::gpipe::ProfileKind",
           /*default=*/"::mlir::gpipe::ProfileKind::CPU",
           "Device profile of the cost model: cpu, h200 or h200-bf16",
           "::mlir::gpipe::getProfileKindValues()">,
    Option<"profileFile", "profile-file", "std::string", /*default=*/"\"\"",
           "A profile measured by gpipe-run --profile: its per-layer times, "
           "action overheads, link and optimizer replace the device "
           "profile's estimates">,
    Option<"optimizer", "optimizer", "::mlir::gpipe::OptimizerKind",
           /*default=*/"::mlir::gpipe::OptimizerKind::SGD",
           "The optimizer whose update a machine profile times: sgd, "
           "momentum or adam",
           "::mlir::gpipe::getOptimizerKindValues()">,
    Option<"machineFile", "machine-file", "std::string", /*default=*/"\"\"",
           "A machine profile gpipe-calibrate measured (GEMM rates by "
           "shape and threads, streaming rates, the cost of a call): the "
           "cpu profile's ops are timed at its rates instead of the "
           "roofline's; a --profile-file's measured layers still replace "
           "both">,
    Option<"gemm", "gemm", "::mlir::gpipe::GemmKind",
           /*default=*/"::mlir::gpipe::GemmKind::Auto",
           "Which implementation a machine profile times each GEMM shape "
           "at: auto, openblas or libxsmm (what the lowering's gemm "
           "chooses)",
           "::mlir::gpipe::getGemmKindValues()">,
    Option<"funcName", "func", "std::string", /*default=*/"\"forward\"",
           "Name of the network function">,
    Option<"pipelineName", "pipeline", "std::string", /*default=*/"\"train\"",
           "Name of the pipeline to create">,
    Option<"forwardOnly", "forward-only", "bool", /*default=*/"false",
           "Build an inference pipeline (GPipe's forward half): stage "
           "forwards only, no backward, the network's prediction as the "
           "last stage's output; needs schedule gpipe, one stage per rank "
           "and one replica, and records remat none">,
  ];
}

def GPipePlanMemoryPass : Pass<"gpipe-plan-memory", "::mlir::ModuleOp"> {
  let summary = "Plan every rank's memory: one arena, static offsets, exact peak";
  let description = [{
    For every scheduled `gpipe.pipeline` (the schedule must pass the
    schedule verifier): derives each stage's sizes from its declaration and
    functions, runs the memory planner over each rank's program
    (include/gpipe/Analysis/MemoryPlan.h) and attaches the result.

    Sizes: parameters are the distinct `nn.param` reads of the forward
    function (their `nn.parameter` types); the gradient accumulator has the
    same size, the optimizer state 0 (`sgd`), 1 (`momentum`) or 2 (`adam`)
    times it. Per micro-batch: the stage input (kept from its receive, or its
    forward on stage 0, to its backward), the forward's other arguments (the
    labels), the output while it waits for its send, the output gradient from
    its receive to the backward, the input gradient from the backward to its
    send. Working sets (scratch, live only during the action): the peak of
    live result bytes over the program points of the forward and backward
    bodies (`nn.layer` bodies inlined; parameter reads and constants are
    free; arguments and the boundary buffers excluded). With `remat none` the
    stage also keeps, until the backward, the values its forward saves for
    it (its last `nn.saved_count` results; everything the forward defines
    when it has no count), and the backward's working set counts only the
    values that depend on the output gradient.

    Results: every `gpipe.program` gets `arena_bytes`, `peak_bytes` (the
    exact peak of live bytes; the arena is at least that), `peak_at` (the
    action where the peak is reached) and `peak_breakdown` (params, grads,
    optimizer, kept, scratch, boundary at the peak); the pipeline gets
    `gpipe.memory_plan` (optimizer, alignment, largest peak and arena, budget,
    per-stage sizes, and per stage the most micro-batches of activations kept
    at once: `kept_microbatches`). Buffered sends: each send slot (a
    stage's SEND_F or SEND_B) gets up to `send-buffers` staging copies in its
    rank's arena (`staged_output` and `staged_input_grad` slots), the fewest
    that keep the simulated step of the stages' times at what the most
    copies give (over the predicted and four perturbed durations); a slot
    without copies stays a rendezvous, and a plan the copies push over
    `memory-budget` is planned again without them. With
    `memory-budget`, a rank whose arena
    exceeds it is an error at the pipeline naming the rank, its stages, the
    bytes it needs and the budget, with a note breaking down its peak.

    ```mlir
    gpipe.program rank 0 attributes {arena_bytes = 2304 : i64, peak_at = "0B0", peak_breakdown = {boundary = 128 : i64, grads = 512 : i64, kept = 512 : i64, optimizer = 0 : i64, params = 512 : i64, scratch = 640 : i64}, peak_bytes = 2304 : i64} {
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::GPipeDialect"];
  let options = [
    Option<"optimizer", "optimizer", "::mlir::gpipe::OptimizerKind",
           /*default=*/"::mlir::gpipe::OptimizerKind::SGD",
           "Optimizer whose state the plan holds: sgd, momentum or adam",
           "::mlir::gpipe::getOptimizerKindValues()">,
    Option<"memoryBudget", "memory-budget", "std::string", /*default=*/"\"\"",
           "Per-rank memory cap, e.g. 16GiB; none when not given (given "
           "empty is an error)">,
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Alignment of every buffer in the arena (a power of two)">,
    ListOption<"reserve", "reserve", "int64_t",
               "Per rank: bytes at the start of its arena kept by another "
               "pipeline sharing it (an evaluation pipeline's training "
               "parameters, gradients and optimizer state); only the "
               "persistent slots are placed below">,
    ListOption<"paramOffsets", "param-offsets", "int64_t",
               "Per stage: the offset of its parameters in its rank's arena "
               "(an evaluation pipeline reading a training pipeline's in "
               "place); empty: packed from 0">,
    Option<"sendBuffers", "send-buffers", "int64_t", /*default=*/"2",
           "The most staging copies a send slot gets, so that its rank goes "
           "on before the peer receives (each slot gets the fewest that keep "
           "the simulated step; 0: every transfer a rendezvous)">,
  ];
}

def GPipePlanReportPass : Pass<"gpipe-plan-report", "::mlir::ModuleOp"> {
  let summary = "Print the plan of a pipeline: stages, times, memory, bubble";
  let description = [{
    Writes a readable report of the pipeline (the module's only one, or the
    one `pipeline` names) to `file`, or to standard output when `file` is
    empty (what `gpipe-compile` prints): per stage its rank, its layers (the
    `nn.layer` ops of its forward function: count and names), its predicted
    forward and backward time per micro-batch (the stage attributes), its
    parameters (count and bytes) and the peak memory of its rank (from
    `gpipe-plan-memory`, when it ran); then the schedule's simulated
    makespan and bubble fraction next to GPipe's closed form (K-1)/(M+K-1),
    and per rank the memory plan's breakdown; for every schedule but 1F1B,
    the largest rank's kept activations beside 1F1B's on as many ranks
    (min(K, M) micro-batches of a rank's even share of the stages' kept
    bytes), and which sends are buffered. Simulation durations are those
    of `gpipe-export-trace`. Last, every distinct GEMM shape the stages run
    (forward, and backward in training; M x N x K and layout, per
    micro-batch), with the implementation `gemm` gives it and, with a
    `machine-file`, that implementation's measured GFLOP/s on one thread.
    The IR is not changed.

    ```
    pipeline @train: 2 stages on 2 ranks, 4 micro-batches, schedule gpipe, remat stage
    stage  rank  layers  forward   backward  parameters       rank peak memory
        0     0       2  832 ns    2.496 us  1,600 (6.2 KiB)  19.9 KiB
        1     1       3  1.215 us  3.646 us  2,442 (9.5 KiB)  30.2 KiB
    layers of stage 0: 0, 2
    layers of stage 1: 4, 6, 8
    schedule gpipe: step time 22.77 us predicted, busy rank 0 58.5%, rank 1 85.4%
    bubble: 28.1% predicted, 20.0% closed form (K-1)/(M+K-1) = 1/5
    micro-batches of activations kept per stage: 4, 4 (of M = 4)
    memory per rank (optimizer sgd, 64-byte aligned buffers):
      rank 0: peak 19.9 KiB (20352 B) at 0B0, arena 19.9 KiB (20352 B) +0.0%; params 6.2 KiB, ...
    ```
  }];
  let dependentDialects = ["::mlir::gpipe::GPipeDialect"];
  let options = [
    Option<"file", "file", "std::string", /*default=*/"\"\"",
           "Path of the report to write; empty: standard output">,
    Option<"pipeline", "pipeline", "std::string", /*default=*/"\"\"",
           "Name of the pipeline to report; empty: the module's only one">,
    Option<"gemm", "gemm", "::mlir::gpipe::GemmKind",
           /*default=*/"::mlir::gpipe::GemmKind::Auto",
           "The GEMM choice to list each GEMM shape's implementation by "
           "(what the lowering's gemm chooses)",
           "::mlir::gpipe::getGemmKindValues()">,
    Option<"machineFile", "machine-file", "std::string", /*default=*/"\"\"",
           "The machine profile whose rates the GEMM list shows (and that "
           "gemm=auto chooses by)">,
  ];
}

#endif // GPIPE_DIALECT_GPIPE_TRANSFORMS_PASSES_TD
