//===- GPipeOps.td - gpipe dialect ops ---------------------*- tablegen -*-===//
//
// The ops of the `gpipe` dialect: `gpipe.stage` (a stage's forward and
// backward functions and boundary types), `gpipe.pipeline` (stages, number of
// micro-batches, schedule family, remat policy, and one `gpipe.program` per
// rank), and the actions a program lists in order: compute (forward,
// backward, its input/weight halves, recompute), point-to-point transfers at
// stage boundaries, gradient reduction and the optimizer step.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_IR_GPIPEOPS_TD
#define GPIPE_DIALECT_GPIPE_IR_GPIPEOPS_TD

include "gpipe/Dialect/GPipe/IR/GPipeBase.td"
include "gpipe/Dialect/GPipe/IR/GPipeAttrs.td"
include "gpipe/Dialect/GPipe/IR/GPipeInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"

//===----------------------------------------------------------------------===//
// Stages
//===----------------------------------------------------------------------===//

def GPipe_StageOp : GPipe_Op<"stage", [Symbol, HasParent<"::mlir::ModuleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Declares one pipeline stage and its per-micro-batch functions";
  let description = [{
    Stage `index` of a pipeline: the `func.func` that runs its forward on one
    micro-batch, the one that runs its backward, and the activation types at
    its two boundaries (`input_type` comes from the previous stage, or is the
    data on stage 0; `output_type` goes to the next stage, or is the loss on
    the last stage; in a forward-only pipeline, the last stage's output is
    the network's prediction, the logits a training pipeline's loss reads).

    Function contracts, checked by the verifier:

    - `forward`: `(input, extra...) -> (output, extra...)`. The first argument
      has type `input_type`, the first result type `output_type`. Extra
      arguments carry what only some stages need (the labels on the last
      stage); parameters are module-level `nn.parameter` symbols, not
      arguments. A forward with `nn.saved_count = N` (remat `none`) returns
      N saved values last: the activations its backward reads.
    - `backward`: `(input, extra..., saved..., output_grad, ...) ->
      (input_grad, extra grads..., param grads...)`: the forward's arguments,
      the forward's N saved results (none without `nn.saved_count`; the
      backward carries the same count), then the gradient of its output (the
      contract of `nn-differentiate`); it returns the gradients of the float
      arguments (listed by `nn.input_grads`), then those of the parameters
      (listed by `nn.param_grads`). Without saved values it recomputes the
      forward itself (the `stage` remat policy needs nothing else kept).
      Stage 0 may omit `input_grad` (its input is the data); every other
      stage returns it first, with type `input_type`. Left out exactly in
      a `forward_only` pipeline, whose forwards take only the stage input.
    - `backward_input` and `backward_weight` (optional, both or neither): the
      zero-bubble split of `backward`, needed by `gpipe.backward_input` and
      `gpipe.backward_weight` actions. Both take the arguments of
      `backward`; `backward_input` returns `input_grad` first like it.

    `forward_time` and `backward_time` (seconds, optional) are the cost
    model's estimates; `gpipe-export-trace` simulates with them. With a
    split backward, `backward_input_time` and `backward_weight_time` say how
    the backward's time divides between its halves (without them: evenly);
    the zero-bubble schedules are ordered with them. With data parallelism,
    `reduce_time` is the all-reduce of the stage's gradients across the
    replicas (`gpipe.reduce_grad`). `step_time` is the optimizer's update
    of the stage's parameters (`gpipe.step`; without it: free).

    ```mlir
    func.func private @s0_fwd(tensor<8x16xf32>) -> tensor<8x32xf32>
    func.func private @s0_bwd(tensor<8x16xf32>, tensor<8x32xf32>) -> tensor<32x16xf32>
    gpipe.stage @s0 index 0 : tensor<8x16xf32> -> tensor<8x32xf32> forward @s0_fwd backward @s0_bwd
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       I64Attr:$index,
                       TypeAttrOf<AnyStaticShapeTensor>:$input_type,
                       TypeAttrOf<AnyStaticShapeTensor>:$output_type,
                       FlatSymbolRefAttr:$forward,
                       OptionalAttr<FlatSymbolRefAttr>:$backward,
                       OptionalAttr<FlatSymbolRefAttr>:$backward_input,
                       OptionalAttr<FlatSymbolRefAttr>:$backward_weight,
                       OptionalAttr<F64Attr>:$forward_time,
                       OptionalAttr<F64Attr>:$backward_time,
                       OptionalAttr<F64Attr>:$backward_input_time,
                       OptionalAttr<F64Attr>:$backward_weight_time,
                       OptionalAttr<F64Attr>:$reduce_time,
                       OptionalAttr<F64Attr>:$step_time);
  let assemblyFormat = [{
    $sym_name `index` $index `:` $input_type `->` $output_type
    `forward` $forward (`backward` $backward^)?
    (`backward_input` $backward_input^)?
    (`backward_weight` $backward_weight^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The stage index as a signed value.
    int64_t getStageIndex() { return getIndexAttr().getInt(); }
    /// Whether the stage declares a backward (not in a forward-only
    /// pipeline).
    bool hasBackward() { return static_cast<bool>(getBackwardAttr()); }
    /// Whether the stage declares the zero-bubble split backward.
    bool hasSplitBackward() {
      return getBackwardInputAttr() && getBackwardWeightAttr();
    }
  }];
}

//===----------------------------------------------------------------------===//
// Re-materialization
//===----------------------------------------------------------------------===//

def GPipe_RematOp : GPipe_Op<"remat", [
    SingleBlockImplicitTerminator<"::mlir::gpipe::YieldOp">,
    RecursiveMemoryEffects]> {
  let summary = "The forward a backward re-runs instead of keeping it";
  let description = [{
    In a stage's backward function, the ops that recompute the stage's
    forward from its kept input (GPipe's re-materialization): they run in
    place, in order, and the region yields the recomputed activations the
    gradient ops read. `policy` is the pipeline's remat policy that put the
    region there (`stage`: keep only the stage input). With remat `none`
    the forward saves those activations instead and the backward has no
    region. Parameter reads and constants stay outside: they are reads, not
    recomputation.

    ```mlir
    %w = nn.param @w0 : tensor<16x8xf32>
    %h, %y = gpipe.remat stage -> (tensor<4x8xf32>, tensor<4x8xf32>) {
      %0 = nn.matmul %x, %w : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
      %1 = nn.relu %0 : tensor<4x8xf32>
      gpipe.yield %0, %1 : tensor<4x8xf32>, tensor<4x8xf32>
    }
    ```
  }];
  let arguments = (ins GPipe_RematAttr:$policy);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat =
      "`` $policy (`->` type($results)^)? $body attr-dict";
  let hasVerifier = 1;
}

def GPipe_YieldOp : GPipe_Op<"yield", [Pure, Terminator, ReturnLike,
    HasParent<"::mlir::gpipe::RematOp">]> {
  let summary = "The values a re-materialization region gives back";
  let arguments = (ins Variadic<AnyType>:$values);
  let builders = [OpBuilder<(ins), [{ /* nothing */ }]>];
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

//===----------------------------------------------------------------------===//
// Pipeline and programs
//===----------------------------------------------------------------------===//

def GPipe_PipelineOp : GPipe_Op<"pipeline", [Symbol,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>, SingleBlock,
    NoTerminator]> {
  let summary = "A pipeline: its stages, micro-batches and per-rank programs";
  let description = [{
    The training step of a pipeline: `stages` lists its `gpipe.stage`
    symbols in pipeline order (the stage at position k has index k, and the
    output type of each stage is the input type of the next), `microbatches`
    is M, `schedule` the schedule family and `remat` the re-materialization
    policy. `virtual_stages` V (default 1) says how many stages each rank
    holds in the generated schedule: the stages are cut for K·V of them and
    placed on K ranks (round-robin for interleaved 1F1B, V-shaped for zbv,
    dualpipev, v-half and v-min). `data_parallel` D (default 1) says how many replicas of
    the pipeline train together: each runs the programs on its own share of
    the mini-batch (B/D samples, M micro-batches of B/(M·D)), and every
    stage's gradients are summed over the replicas by a `gpipe.reduce_grad`
    between its last backward and its step.

    `clip_grad_norm` X clips the gradients to the global L2 norm X before
    the updates: the schedule gives every rank a `gpipe.clip_grad` before
    its steps (X is the default bound of a run).

    `forward_only` makes it an inference pipeline: GPipe's forward half. Its
    stages declare no backward, its forwards take only the stage input (no
    labels: no loss is computed) and the last stage's forward returns the
    network's prediction (the logits); its programs hold only forwards and
    forward sends and receives (no backward, recompute, gradient reduction
    or step); it is scheduled `gpipe`, with one stage per rank, one replica
    and remat `none` (nothing is kept for a backward).

    ```mlir
    gpipe.pipeline @infer stages [@infer_s0, @infer_s1] microbatches 2 schedule gpipe remat none forward_only {
      gpipe.program rank 0 {
        gpipe.for %mb = 0 to 2 {
          gpipe.forward @infer_s0 mb %mb
          gpipe.send @infer_s0 mb %mb forward to 1 : tensor<4x32xf32>
        }
      }
      gpipe.program rank 1 {
        gpipe.for %mb = 0 to 2 {
          gpipe.recv @infer_s1 mb %mb forward from 0 : tensor<4x32xf32>
          gpipe.forward @infer_s1 mb %mb
        }
      }
    }
    ```

    The body is empty until a schedule is generated (`gpipe-schedule`) or
    imported (`gpipe-import-schedule`); then it holds one `gpipe.program` per
    rank, ranks 0, 1, ... in order. Which rank runs a stage follows from the
    programs: the one whose actions name it; a stage may not appear on two
    ranks. A rank may run several stages (interleaved schedules).

    ```mlir
    gpipe.pipeline @train stages [@s0, @s1] microbatches 2 schedule gpipe remat stage {
      gpipe.program rank 0 {
        gpipe.forward @s0 mb 0
        gpipe.send @s0 mb 0 forward to 1 : tensor<8x32xf32>
        ...
        gpipe.step @s0
      }
      gpipe.program rank 1 {
        gpipe.recv @s1 mb 0 forward from 0 : tensor<8x32xf32>
        gpipe.forward @s1 mb 0
        ...
        gpipe.step @s1
      }
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       FlatSymbolRefArrayAttr:$stages,
                       I64Attr:$microbatches,
                       GPipe_ScheduleKindAttr:$schedule,
                       OptionalAttr<I64Attr>:$virtual_stages,
                       GPipe_RematAttr:$remat,
                       OptionalAttr<I64Attr>:$data_parallel,
                       UnitAttr:$forward_only,
                       OptionalAttr<F64Attr>:$clip_grad_norm,
                       OptionalAttr<GPipe_MemoryPlanAttr>:$memory_plan);
  let regions = (region AnyRegion:$body);
  let assemblyFormat = [{
    $sym_name `stages` $stages `microbatches` $microbatches
    `schedule` `` $schedule (`virtual_stages` $virtual_stages^)?
    `remat` `` $remat (`data_parallel` $data_parallel^)?
    (`forward_only` $forward_only^)?
    (`clip_grad_norm` $clip_grad_norm^)?
    (`memory_plan` $memory_plan^)? attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumStages() { return getStages().size(); }
    /// Whether this is an inference (forward-only) pipeline.
    bool isForwardOnly() { return getForwardOnly(); }
    int64_t getNumMicrobatches() { return getMicrobatchesAttr().getInt(); }
    /// V, the stages each rank holds when the schedule is generated (1
    /// without `virtual_stages`).
    int64_t getNumVirtualStages() {
      return getVirtualStagesAttr() ? getVirtualStagesAttr().getInt() : 1;
    }
    /// D, the data-parallel replicas (1 without `data_parallel`).
    int64_t getNumReplicas() {
      return getDataParallelAttr() ? getDataParallelAttr().getInt() : 1;
    }
    /// X of `clip_grad_norm`, or nullopt.
    std::optional<double> getClipBound() {
      if (auto attr = getClipGradNormAttr())
        return attr.getValueAsDouble();
      return std::nullopt;
    }
    /// The programs of the body, rank 0 first.
    ::llvm::SmallVector<ProgramOp, 8> getPrograms();
    /// The number of programs (ranks); 0 before scheduling.
    int64_t getNumRanks();
    /// Whether the body holds programs.
    bool isScheduled() { return getNumRanks() != 0; }
    /// The position of `stage` in `stages`, or -1.
    int64_t getStagePosition(::mlir::FlatSymbolRefAttr stage);
  }];
}

def GPipe_ProgramOp : GPipe_Op<"program", [HasParent<"::mlir::gpipe::PipelineOp">,
    SingleBlock, NoTerminator]> {
  let summary = "The ordered actions one rank runs";
  let description = [{
    The program of rank `rank`: its actions run one after the other, sends
    and receives blocking until the peer reaches the matching action. The
    body holds actions and `gpipe.for` loops over micro-batches: each
    periodic phase of a schedule is one loop (GPipe: a forward loop and a
    backward loop; 1F1B: warm-up, steady one-forward-one-backward,
    cool-down), so a program's size does not grow with M. Schedules without
    a period (an imported CSV) may list every action.

    Once memory is planned the program carries its `arena`: the size, the
    exact peak and every slot (see `#gpipe.arena`).

    ```mlir
    gpipe.program rank 1 {
      gpipe.for %mb = 0 to 4 {
        gpipe.recv @s1 mb %mb forward from 0 : tensor<8x32xf32>
        gpipe.forward @s1 mb %mb
      }
      gpipe.for %mb = 0 to 4 {
        gpipe.backward @s1 mb %mb
        gpipe.send @s1 mb %mb backward to 0 : tensor<8x32xf32>
      }
      gpipe.step @s1
    }
    ```
  }];
  let arguments = (ins I64Attr:$rank, OptionalAttr<GPipe_ArenaAttr>:$arena);
  let regions = (region AnyRegion:$body);
  let assemblyFormat =
      "`rank` $rank (`arena` $arena^)? attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getRankIndex() { return getRankAttr().getInt(); }
    PipelineOp getPipeline();
  }];
}

def GPipe_ForOp : GPipe_Op<"for", [HasParent<"::mlir::gpipe::ProgramOp">,
    SingleBlock, NoTerminator,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames"]>]> {
  let summary = "A loop over consecutive micro-batches";
  let description = [{
    Runs its body once for each micro-batch index `%mb` from `lower` to
    `upper` - 1, in order. The body holds actions whose micro-batch is
    `%mb` plus a constant (`mb %mb + 3`): one period of the schedule.
    Loops do not nest.

    ```mlir
    gpipe.for %mb = 0 to 5 {
      gpipe.forward @s0 mb %mb + 3
      gpipe.send @s0 mb %mb + 3 forward to 1 : tensor<8x32xf32>
      gpipe.recv @s0 mb %mb backward from 1 : tensor<8x32xf32>
      gpipe.backward @s0 mb %mb
    }
    ```
  }];
  let arguments = (ins I64Attr:$lower, I64Attr:$upper);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let builders = [
    OpBuilder<(ins "int64_t":$lower, "int64_t":$upper)>,
  ];
  let extraClassDeclaration = [{
    int64_t getLowerBound() { return getLowerAttr().getInt(); }
    int64_t getUpperBound() { return getUpperAttr().getInt(); }
    int64_t getTripCount() { return getUpperBound() - getLowerBound(); }
    /// The micro-batch index of the body.
    ::mlir::BlockArgument getInductionVar() {
      return getBody().front().getArgument(0);
    }
  }];
}

//===----------------------------------------------------------------------===//
// Actions
//===----------------------------------------------------------------------===//

class GPipe_ActionOp<string mnemonic, list<Trait> traits = []>
    : GPipe_Op<mnemonic, !listconcat([ParentOneOf<["::mlir::gpipe::ProgramOp",
                                                   "::mlir::gpipe::ForOp"]>,
        DeclareOpInterfaceMethods<GPipe_ActionOpInterface>,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>], traits)> {
  code actionKind = ?;
  let extraClassDefinition = [{
    ::mlir::gpipe::ActionKind $cppClass::getActionKind() {
      }] # actionKind # [{
    }
    ::llvm::LogicalResult
    $cppClass::verifySymbolUses(::mlir::SymbolTableCollection &symbolTable) {
      return ::mlir::gpipe::detail::verifyActionSymbolUses(*this, symbolTable);
    }
  }];
}

// An action on one micro-batch of a stage that runs the stage's functions.
class GPipe_ComputeOp<string mnemonic, string kind>
    : GPipe_ActionOp<mnemonic> {
  let arguments = (ins FlatSymbolRefAttr:$stage, Optional<Index>:$base,
                       I64Attr:$microbatch);
  let assemblyFormat =
      "$stage `mb` custom<Microbatch>($base, $microbatch) attr-dict";
  let actionKind = "return ::mlir::gpipe::ActionKind::" # kind # ";";
  let builders = [
    OpBuilder<(ins "::mlir::FlatSymbolRefAttr":$stage, "::mlir::Value":$base,
                   "int64_t":$mb), [{
      build($_builder, $_state, stage, base, $_builder.getI64IntegerAttr(mb));
    }]>,
  ];
  let extraClassDeclaration = [{
    /// The constant part of the micro-batch (all of it without a base).
    int64_t getMicrobatchOffset() { return getMicrobatchAttr().getInt(); }
    ::mlir::Value getMicrobatchBase() { return getBase(); }
  }];
}

def GPipe_ForwardOp : GPipe_ComputeOp<"forward", "Forward"> {
  let summary = "Run a stage's forward on one micro-batch (F)";
  let description = [{
    Calls the stage's `forward` function on the activation of micro-batch
    `mb` (received, handed over by the previous stage on the same rank, or the
    data on stage 0) and keeps the result for the next stage. It also keeps
    its input for the backward, and under the `none` remat policy the values
    the forward saves (its results after the output, `nn.saved_count`).

    ```mlir
    gpipe.forward @s0 mb 3
    ```
  }];
}

def GPipe_BackwardOp : GPipe_ComputeOp<"backward", "Backward"> {
  let summary = "Run a stage's full backward on one micro-batch (B)";
  let description = [{
    Calls the stage's `backward` function with the kept input of micro-batch
    `mb` and the gradient of its output, accumulates the parameter gradients
    (backwards run in micro-batch order, so the sum is the same for every
    schedule), and keeps the input gradient for the previous stage.

    ```mlir
    gpipe.backward @s0 mb 3
    ```
  }];
}

def GPipe_BackwardInputOp : GPipe_ComputeOp<"backward_input",
                                            "BackwardInput"> {
  let summary = "Run the input-gradient half of a split backward (I)";
  let description = [{
    The zero-bubble split of `gpipe.backward`: computes only the gradient of
    the stage's input for micro-batch `mb`, so it can be sent upstream early.
    The stage must declare `backward_input` and `backward_weight`.

    ```mlir
    gpipe.backward_input @s1 mb 0
    ```
  }];
}

def GPipe_BackwardWeightOp : GPipe_ComputeOp<"backward_weight",
                                             "BackwardWeight"> {
  let summary = "Run the weight-gradient half of a split backward (W)";
  let description = [{
    The zero-bubble split of `gpipe.backward`: computes and accumulates the
    parameter gradients of micro-batch `mb`, after its `gpipe.backward_input`.
    The stage must declare `backward_input` and `backward_weight`.

    ```mlir
    gpipe.backward_weight @s1 mb 0
    ```
  }];
}

def GPipe_RecomputeOp : GPipe_ComputeOp<"recompute", "Recompute"> {
  let summary = "Re-run a stage's forward before its backward (R)";
  let description = [{
    Re-materializes the activations of micro-batch `mb` from the stage's kept
    boundary input, between its forward and its backward. Only in pipelines
    whose remat policy is not `none`. The generated schedules do not use it
    (their backward functions recompute internally); it is the room for
    schedules that place the recompute on its own, e.g. to overlap it with a
    transfer.

    ```mlir
    gpipe.recompute @s0 mb 3
    ```
  }];
}

// A point-to-point transfer at a stage boundary.
class GPipe_TransferOp<string mnemonic, string peerKeyword>
    : GPipe_ActionOp<mnemonic> {
  let arguments = (ins FlatSymbolRefAttr:$stage, Optional<Index>:$base,
                       I64Attr:$microbatch,
                       GPipe_DirectionAttr:$direction, I64Attr:$peer,
                       TypeAttrOf<AnyStaticShapeTensor>:$payload);
  // The direction attribute prints its own leading space.
  let assemblyFormat = "$stage `mb` custom<Microbatch>($base, $microbatch) `` "
                       "$direction `" # peerKeyword #
                       "` $peer attr-dict `:` $payload";
  let builders = [
    OpBuilder<(ins "::mlir::FlatSymbolRefAttr":$stage, "::mlir::Value":$base,
                   "int64_t":$mb, "::mlir::gpipe::Direction":$direction,
                   "int64_t":$peer, "::mlir::Type":$payload), [{
      build($_builder, $_state, stage, base, $_builder.getI64IntegerAttr(mb),
            ::mlir::gpipe::DirectionAttr::get($_builder.getContext(), direction),
            $_builder.getI64IntegerAttr(peer), ::mlir::TypeAttr::get(payload));
    }]>,
  ];
  let extraClassDeclaration = [{
    int64_t getMicrobatchOffset() { return getMicrobatchAttr().getInt(); }
    ::mlir::Value getMicrobatchBase() { return getBase(); }
    int64_t getPeerRank() { return getPeerAttr().getInt(); }
    bool isForward() { return getDirection() == ::mlir::gpipe::Direction::Forward; }
  }];
}

def GPipe_SendOp : GPipe_TransferOp<"send", "to"> {
  let summary = "Send an activation or gradient across a stage boundary";
  let description = [{
    Stage `@s` sends the data of micro-batch `mb` to rank `peer` and blocks
    until the peer's matching `gpipe.recv`. `forward`: the stage's output
    activation to the next stage (SEND_F), payload `output_type`;
    `backward`: the gradient of the stage's input to the previous stage
    (SEND_B), payload `input_type`.

    ```mlir
    gpipe.send @s0 mb 3 forward to 1 : tensor<8x32xf32>
    gpipe.send @s1 mb 3 backward to 0 : tensor<8x32xf32>
    ```
  }];
  let actionKind = [{
    return isForward() ? ::mlir::gpipe::ActionKind::SendF
                       : ::mlir::gpipe::ActionKind::SendB;
  }];
}

def GPipe_RecvOp : GPipe_TransferOp<"recv", "from"> {
  let summary = "Receive an activation or gradient across a stage boundary";
  let description = [{
    Stage `@s` receives the data of micro-batch `mb` from rank `peer`,
    blocking until it arrives. `forward`: its input activation from the
    previous stage (RECV_F), payload `input_type`; `backward`: the gradient of
    its output from the next stage (RECV_B), payload `output_type`.

    ```mlir
    gpipe.recv @s1 mb 3 forward from 0 : tensor<8x32xf32>
    gpipe.recv @s0 mb 3 backward from 1 : tensor<8x32xf32>
    ```
  }];
  let actionKind = [{
    return isForward() ? ::mlir::gpipe::ActionKind::RecvF
                       : ::mlir::gpipe::ActionKind::RecvB;
  }];
}

// An action on a whole stage, after its micro-batches.
class GPipe_StageActionOp<string mnemonic, string kind>
    : GPipe_ActionOp<mnemonic> {
  let arguments = (ins FlatSymbolRefAttr:$stage);
  let assemblyFormat = "$stage attr-dict";
  let actionKind = "return ::mlir::gpipe::ActionKind::" # kind # ";";
}

def GPipe_ReduceGradOp : GPipe_StageActionOp<"reduce_grad", "ReduceGrad"> {
  let summary = "All-reduce a stage's gradients across data-parallel replicas";
  let description = [{
    Sums the accumulated parameter gradients of the stage over its
    data-parallel replicas (REDUCE_GRAD), after the stage's last backward and
    before its step. Generated for every stage of a pipeline with
    `data_parallel` D > 1 (and a no-op with one replica): the reduction
    starts when the action runs and the stage's step waits for it, so it
    overlaps the rest of the rank's program.

    ```mlir
    gpipe.reduce_grad @s0
    ```
  }];
}

def GPipe_SumTiedOp : GPipe_StageActionOp<"sum_tied", "SumTied"> {
  let summary = "Sum the gradients of a rank's tied parameter copies";
  let description = [{
    A parameter read by several layers has one copy per layer
    (`nn.parameter ... tied_to`), possibly on several ranks. SUM_TIED makes
    every copy's gradient the sum of all copies' gradients, in copy order,
    so that the steps keep the copies equal: for each tied parameter with a
    copy on this rank, in the order of the parameters, copy 0's holder
    gathers the others' gradients and adds them one by one in copy order,
    then hands the sum back to every holder. One per rank holding a copy,
    named by the rank's first stage that holds one, after every other
    action and before the steps (after the data-parallel reductions it
    waits for); as every holder takes the parameters in the same order, the
    sums cannot wait on each other in a cycle.

    ```mlir
    gpipe.sum_tied @s0
    ```
  }];
}

def GPipe_ClipGradOp : GPipe_StageActionOp<"clip_grad", "ClipGrad"> {
  let summary = "Scale every gradient to the global norm bound (CLIP_GRAD)";
  let description = [{
    Gradient clipping by the global L2 norm over every parameter of every
    stage, as `torch.nn.utils.clip_grad_norm_`: every gradient is scaled by
    min(1, X / (norm + 1e-6)) before the steps, X the run's bound (the
    pipeline's `clip_grad_norm`, or gpipe-run's). The norm has one
    summation order whatever the cut: each parameter's sum of squares (in
    double, element order) is added to one running sum in parameter order,
    which the ranks hand along the stages in stage order; the last stage's
    holder hands the total to every other rank. A tied parameter counts
    once, at its first copy. One per rank, named by its lowest stage, after
    all its other work (its data-parallel reductions and tied sum included)
    and before its steps. Each replica of a data-parallel pipeline computes
    the same norm from its reduced gradients. The running sum travels in the
    rank's `norm` slot.

    ```mlir
    gpipe.clip_grad @s0
    ```
  }];
}

def GPipe_StepOp : GPipe_StageActionOp<"step", "Step"> {
  let summary = "Apply the optimizer update of a stage (STEP)";
  let description = [{
    One synchronous optimizer update of the stage's parameters with the
    gradients accumulated over all micro-batches, after its last backward.
    Steps come last in a program.

    ```mlir
    gpipe.step @s0
    ```
  }];
}

#endif // GPIPE_DIALECT_GPIPE_IR_GPIPEOPS_TD
