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
    Option<"schedule", "schedule", "std::string", /*default=*/"\"\"",
           "`gpipe` or `1f1b`; empty: each pipeline's `schedule` attribute">,
  ];
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
    Option<"communication", "communication", "std::string",
           /*default=*/"\"auto\"",
           "`auto`: place sends and receives when the CSV has none; `keep`: "
           "import the cells as they are; `insert`: always place them anew">,
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
    (`profile`: `cpu` or `h200`), finds the partition into `stages`
    contiguous stages that minimizes the slowest stage (boundary transfers
    included) under `memory-budget`, or takes the manual `balance`, and
    builds:

    - per stage, `@<pipeline>_s<k>_fwd` (its layers on one micro-batch; the
      last stage also takes the labels and returns the loss) and
      `@<pipeline>_s<k>_bwd` (recompute + reverse mode, `nn-differentiate`'s
      contract; the last stage's seed is scaled by 1/M so that the M
      accumulated micro-batch gradients equal the mini-batch gradient);
    - `gpipe.stage @<pipeline>_s<k>` declarations with the estimated times;
    - an empty `gpipe.pipeline @<pipeline>` for `gpipe-schedule`.

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
    Option<"schedule", "schedule", "std::string", /*default=*/"\"gpipe\"",
           "Schedule family recorded on the pipeline: gpipe or 1f1b">,
    Option<"remat", "remat", "std::string", /*default=*/"\"stage\"",
           "Re-materialization policy: stage or none">,
    ListOption<"balance", "balance", "int64_t",
               "Layers per stage (manual partition); overrides the search">,
    Option<"memoryBudget", "memory-budget", "std::string", /*default=*/"\"\"",
           "Per-stage memory cap, e.g. 16GiB">,
    Option<"profile", "profile", "std::string", /*default=*/"\"cpu\"",
           "Device profile of the cost model: cpu or h200">,
    Option<"funcName", "func", "std::string", /*default=*/"\"forward\"",
           "Name of the network function">,
    Option<"pipelineName", "pipeline", "std::string", /*default=*/"\"train\"",
           "Name of the pipeline to create">,
  ];
}

#endif // GPIPE_DIALECT_GPIPE_TRANSFORMS_PASSES_TD
