//===- GPipeAttrs.td - gpipe dialect attributes ------------*- tablegen -*-===//
//
// The enums of the `gpipe` dialect: the direction of a transfer, the schedule
// family of a pipeline, and its re-materialization policy.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_IR_GPIPEATTRS_TD
#define GPIPE_DIALECT_GPIPE_IR_GPIPEATTRS_TD

include "gpipe/Dialect/GPipe/IR/GPipeBase.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Direction
//===----------------------------------------------------------------------===//

def GPipe_DirectionForward : I32EnumAttrCase<"Forward", 0, "forward">;
def GPipe_DirectionBackward : I32EnumAttrCase<"Backward", 1, "backward">;

def GPipe_Direction : I32EnumAttr<"Direction",
    "which way a transfer crosses a stage boundary",
    [GPipe_DirectionForward, GPipe_DirectionBackward]> {
  let cppNamespace = "::mlir::gpipe";
  let genSpecializedAttr = 0;
}

def GPipe_DirectionAttr : EnumAttr<GPipe_Dialect, GPipe_Direction,
                                   "direction"> {
  let summary = "Direction of a transfer: activation forward, gradient backward";
  let description = [{
    `forward` moves a micro-batch's activation from stage k to stage k+1;
    `backward` moves the gradient of that activation from stage k+1 back to
    stage k.

    ```mlir
    gpipe.send @s0 mb 3 forward to 1 : tensor<8x32xf32>
    gpipe.send @s1 mb 3 backward to 0 : tensor<8x32xf32>
    ```
  }];
  let assemblyFormat = "$value";
}

//===----------------------------------------------------------------------===//
// Schedule kind
//===----------------------------------------------------------------------===//

def GPipe_ScheduleGPipe : I32EnumAttrCase<"GPipe", 0, "gpipe">;
def GPipe_Schedule1F1B : I32EnumAttrCase<"OneFOneB", 1, "1f1b">;
def GPipe_ScheduleCustom : I32EnumAttrCase<"Custom", 2, "custom">;
def GPipe_ScheduleInterleaved : I32EnumAttrCase<"Interleaved1F1B", 3,
                                                "interleaved-1f1b">;
def GPipe_ScheduleZBH1 : I32EnumAttrCase<"ZBH1", 4, "zb-h1">;
def GPipe_ScheduleZBH2 : I32EnumAttrCase<"ZBH2", 5, "zb-h2">;
def GPipe_ScheduleZBV : I32EnumAttrCase<"ZBV", 6, "zbv">;
def GPipe_ScheduleDualPipeV : I32EnumAttrCase<"DualPipeV", 7, "dualpipev">;
def GPipe_ScheduleZBAuto : I32EnumAttrCase<"ZBAuto", 8, "zb-auto">;
def GPipe_ScheduleVHalf : I32EnumAttrCase<"VHalf", 9, "v-half">;
def GPipe_ScheduleVMin : I32EnumAttrCase<"VMin", 10, "v-min">;

def GPipe_ScheduleKind : I32EnumAttr<"ScheduleKind",
    "the schedule family of a pipeline",
    [GPipe_ScheduleGPipe, GPipe_Schedule1F1B, GPipe_ScheduleCustom,
     GPipe_ScheduleInterleaved, GPipe_ScheduleZBH1, GPipe_ScheduleZBH2,
     GPipe_ScheduleZBV, GPipe_ScheduleDualPipeV, GPipe_ScheduleZBAuto,
     GPipe_ScheduleVHalf, GPipe_ScheduleVMin]> {
  let cppNamespace = "::mlir::gpipe";
  let genSpecializedAttr = 0;
  // "1f1b", "zb-h1"... are not bare keywords: print them quoted so that
  // they parse back.
  let parameterPrinter =
      "$_printer.printKeywordOrString(" # symbolToStringFnName # "($_self))";
}

def GPipe_ScheduleKindAttr : EnumAttr<GPipe_Dialect, GPipe_ScheduleKind,
                                      "schedule"> {
  let summary = "Schedule family: a generated one or custom";
  let description = [{
    `gpipe` is fill-drain (all forwards, then all backwards), `1f1b` is
    non-interleaved one-forward-one-backward (PipeDream-flush),
    `interleaved-1f1b` Megatron's interleaved 1F1B (V stages per rank,
    round-robin), `zb-h1` and `zb-h2` the handcrafted zero-bubble schedules
    (split backward), `zbv` zero-bubble V (two stages per rank, V-shaped),
    `dualpipev` DualPipe's V-shaped form, `v-half` and `v-min` the V-shaped
    schedules of controllable memory (about a half and a third of 1F1B's
    activations), `zb-auto` the zero-bubble heuristic on the cost model's
    times; `custom` a schedule imported from a
    CSV file. `gpipe-schedule` generates all but `custom`
    (gpipe/Analysis/Schedule.h says which shapes each accepts); every one is
    checked by `gpipe-verify-schedule`. Names that are not keywords (`1f1b`,
    `zb-h1`, ...) are printed quoted.

    ```mlir
    gpipe.pipeline @train stages [@s0, @s1] microbatches 4 schedule "1f1b" remat stage {
    }
    ```
  }];
  let assemblyFormat = "$value";
}

//===----------------------------------------------------------------------===//
// Re-materialization policy
//===----------------------------------------------------------------------===//

def GPipe_RematNone : I32EnumAttrCase<"None", 0, "none">;
def GPipe_RematStage : I32EnumAttrCase<"Stage", 1, "stage">;
def GPipe_RematSelective : I32EnumAttrCase<"Selective", 2, "selective">;
def GPipe_RematAuto : I32EnumAttrCase<"Auto", 3, "auto">;

def GPipe_Remat : I32EnumAttr<"Remat",
    "what a stage keeps between its forward and its backward",
    [GPipe_RematNone, GPipe_RematStage, GPipe_RematSelective,
     GPipe_RematAuto]> {
  let cppNamespace = "::mlir::gpipe";
  let genSpecializedAttr = 0;
}

def GPipe_RematAttr : EnumAttr<GPipe_Dialect, GPipe_Remat, "remat"> {
  let summary = "Re-materialization policy: none, stage or selective";
  let description = [{
    `none` keeps every activation of a micro-batch's forward until its
    backward; `stage` (GPipe's policy) keeps only the stage's boundary input
    and recomputes the forward during the backward; `selective` keeps the
    activations of every layer but the ones named to be recomputed (the
    backward's `gpipe.remat` region recomputes those from the kept values).
    `auto` is an option value only: gpipe-compile resolves it to
    `selective` with the layers that fit the memory budget at the least
    recompute time, and no pipeline carries it.

    ```mlir
    gpipe.pipeline @train stages [@s0, @s1] microbatches 4 schedule gpipe remat none {
    }
    ```
  }];
  let assemblyFormat = "$value";
}


//===----------------------------------------------------------------------===//
// The memory plan
//===----------------------------------------------------------------------===//

// The optimizer is the vocabulary's enum (gpipe/Runtime/Vocabulary.h), the
// one the options, the analyses and the runtime use, spelled `sgd`,
// `momentum` or `adam` and parsed by its one parser (aliases included).
def GPipe_OptimizerParameter
    : AttrParameter<"::gpipe::abi::OptimizerKind", "an optimizer"> {
  let parser = [{ [&]() -> ::mlir::FailureOr<::gpipe::abi::OptimizerKind> {
    ::llvm::StringRef name;
    ::llvm::SMLoc loc = $_parser.getCurrentLocation();
    if ($_parser.parseKeyword(&name))
      return ::mlir::failure();
    if (auto kind = ::gpipe::abi::parseOptimizerKind(name))
      return *kind;
    return $_parser.emitError(loc,
        ::gpipe::abi::getUnknownOptimizerMessage(name));
  }() }];
  let printer = [{ $_printer << ::gpipe::abi::getOptimizerName($_self) }];
}

def GPipe_SlotParams : I32EnumAttrCase<"Parameters", 0, "params">;
def GPipe_SlotGrads : I32EnumAttrCase<"Gradients", 1, "grads">;
def GPipe_SlotOptimizer : I32EnumAttrCase<"OptimizerState", 2, "optimizer">;
def GPipe_SlotInput : I32EnumAttrCase<"Input", 3, "input">;
def GPipe_SlotExtra : I32EnumAttrCase<"ExtraInput", 4, "extra">;
def GPipe_SlotSaved : I32EnumAttrCase<"Saved", 5, "saved">;
def GPipe_SlotOutput : I32EnumAttrCase<"Output", 6, "output">;
def GPipe_SlotOutputGrad : I32EnumAttrCase<"OutputGrad", 7, "output_grad">;
def GPipe_SlotInputGrad : I32EnumAttrCase<"InputGrad", 8, "input_grad">;
def GPipe_SlotScratch : I32EnumAttrCase<"Scratch", 9, "scratch">;
def GPipe_SlotDeferred : I32EnumAttrCase<"Deferred", 10, "deferred">;
def GPipe_SlotReduce : I32EnumAttrCase<"Reduce", 11, "reduce">;
def GPipe_SlotTied : I32EnumAttrCase<"Tied", 12, "tied">;
def GPipe_SlotNorm : I32EnumAttrCase<"Norm", 13, "norm">;
def GPipe_SlotStagedOutput
    : I32EnumAttrCase<"StagedOutput", 14, "staged_output">;
def GPipe_SlotStagedInputGrad
    : I32EnumAttrCase<"StagedInputGrad", 15, "staged_input_grad">;

def GPipe_SlotKind : I32EnumAttr<"SlotKind",
    "what a slot of a rank's arena holds",
    [GPipe_SlotParams, GPipe_SlotGrads, GPipe_SlotOptimizer, GPipe_SlotInput,
     GPipe_SlotExtra, GPipe_SlotSaved, GPipe_SlotOutput, GPipe_SlotOutputGrad,
     GPipe_SlotInputGrad, GPipe_SlotScratch, GPipe_SlotDeferred,
     GPipe_SlotReduce, GPipe_SlotTied, GPipe_SlotNorm, GPipe_SlotStagedOutput,
     GPipe_SlotStagedInputGrad]> {
  let cppNamespace = "::mlir::gpipe";
  let genSpecializedAttr = 0;
}

class GPipe_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<GPipe_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def GPipe_SlotAttr : GPipe_Attr<"Slot", "slot"> {
  let summary = "A slot of a rank's arena: `count` copies of one buffer";
  let description = [{
    Where one kind of buffer of one stage lives in its rank's arena: `count`
    copies of `size` bytes, `stride` bytes apart, from byte `offset`, or,
    with a `table` (the planner placed each buffer on its own), copy c at
    byte table[c] (-1: a copy no micro-batch uses; `offset` is the lowest).
    Micro-batch `mb` uses copy `mb mod count`; persistent buffers
    (parameters, gradients, optimizer state) and the rank's scratch region
    (`stage -1`: the working set of whichever stage function runs) have one
    copy. The planner picks `count` as the fewest copies such that no two
    micro-batches sharing a copy are live at once, so a slot's size does not
    depend on M unless the schedule keeps all M micro-batches (GPipe's
    stage inputs).

    ```mlir
    #gpipe.slot<input stage 0 at 1024 size 256 x 8 stride 256>
    #gpipe.slot<input stage 2 at 512 size 256 x 3 stride 256 table [1024, 512, 2048]>
    ```
  }];
  let parameters = (ins EnumParameter<GPipe_SlotKind>:$kind,
                        "int64_t":$stage, "int64_t":$offset, "int64_t":$size,
                        "int64_t":$count, "int64_t":$stride,
                        OptionalArrayRefParameter<"int64_t">:$table);
  let assemblyFormat = [{
    `<` $kind `stage` $stage `at` $offset `size` $size `x` $count `stride`
    $stride (`table` ` ` `[` $table^ `]`)? `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The copy micro-batch `mb` uses: mb mod count.
    int64_t getCopyOf(int64_t mb) const {
      return getCount() > 1 ? mb % getCount() : 0;
    }
    /// The byte offset of micro-batch `mb`'s copy (`mb` ignored for slots
    /// of one copy): its table entry, or offset + copy x stride.
    int64_t getOffsetOf(int64_t mb) const {
      int64_t copy = getCopyOf(mb);
      if (!getTable().empty())
        return getTable()[copy];
      return getOffset() + copy * getStride();
    }
    /// The bytes from the slot's offset to the end of its last copy.
    int64_t getSpan() const {
      if (!getTable().empty()) {
        int64_t end = getOffset();
        for (int64_t at : getTable())
          end = std::max(end, at + getSize());
        return end - getOffset();
      }
      return getCount() > 1 ? (getCount() - 1) * getStride() + getSize()
                            : getSize();
    }
  }];
}

def GPipe_BreakdownAttr : GPipe_Attr<"Breakdown", "breakdown"> {
  let summary = "Live bytes by category at a rank's peak";
  let parameters = (ins "int64_t":$params, "int64_t":$grads,
                        "int64_t":$optimizer, "int64_t":$kept,
                        "int64_t":$scratch, "int64_t":$boundary);
  let assemblyFormat = "`<` struct(params) `>`";
}

def GPipe_ArenaAttr : GPipe_Attr<"Arena", "arena"> {
  let summary = "The memory plan of one rank: its arena and every slot in it";
  let description = [{
    Written by `gpipe-plan-memory` on every `gpipe.program`: the arena's
    size, the exact peak of live bytes (at action `peak_at` of the expanded
    program) with its breakdown, and the slots. The lowering places every
    buffer at its slot's offset and decides nothing else about memory.

    ```mlir
    gpipe.program rank 0 arena <size = 2304, peak = 2304, peak_at = 5,
        breakdown = <params = 512, grads = 512, optimizer = 0, kept = 512,
                     scratch = 640, boundary = 128>,
        slots = [#gpipe.slot<params stage 0 at 0 size 512 x 1 stride 512>, ...]> {
    ```
  }];
  let parameters = (ins "int64_t":$size, "int64_t":$peak, "int64_t":$peak_at,
                        "BreakdownAttr":$breakdown,
                        ArrayRefParameter<"SlotAttr">:$slots);
  let assemblyFormat = [{
    `<` `size` `=` $size `,` `peak` `=` $peak `,` `peak_at` `=` $peak_at `,`
    `breakdown` `=` $breakdown `,` `slots` `=` `[` $slots `]` `>`
  }];
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The slot of (`kind`, `stage`), or null.
    SlotAttr lookup(SlotKind kind, int64_t stage) const;
  }];
}

def GPipe_FrameAttr : GPipe_Attr<"Frame", "frame"> {
  let summary = "The scratch layout of one stage function";
  let description = [{
    Written by `gpipe-plan-memory` on every stage function (as the
    discardable `gpipe.frame`): the bytes of its scratch region for one
    micro-batch (what the rank's scratch slot must hold) and, on the last
    stage's backward, where in that region the caller writes the loss seeds.
    Each op of the function that computes into the region carries
    `gpipe.offsets`, one offset per result: a byte offset in the region,
    -1 for a result that lives elsewhere (a parameter, a constant, a view,
    an argument), -2 for the result computed straight into the buffer it
    is sent from (the forward's output, the backward's input gradient).

    ```mlir
    func.func @train_s1_bwd(...) attributes {gpipe.frame = #gpipe.frame<size = 256, seeds = array<i64: 192>>} {
      %0 = nn.matmul %arg0, %w {gpipe.offsets = array<i64: 0>} : ...
    ```
  }];
  let parameters = (ins "int64_t":$size, "DenseI64ArrayAttr":$seeds);
  let assemblyFormat = "`<` struct(params) `>`";
}

def GPipe_MemoryPlanAttr : GPipe_Attr<"MemoryPlan", "memory_plan"> {
  let summary = "What a pipeline's memory plan assumed";
  let description = [{
    Written by `gpipe-plan-memory` on the pipeline: the optimizer whose
    state the arenas hold, the alignment of every slot, the budget it was
    checked against (0: none), the most micro-batches whose activations
    each stage keeps at once, and the largest peak and arena over the ranks.

    ```mlir
    memory_plan <optimizer = sgd, alignment = 64, budget = 0, peak = 2304,
                 arena = 2304, kept = [2, 2]>
    ```
  }];
  let parameters = (ins GPipe_OptimizerParameter:$optimizer,
                        "int64_t":$alignment, "int64_t":$budget,
                        "int64_t":$peak, "int64_t":$arena,
                        ArrayRefParameter<"int64_t">:$kept);
  let assemblyFormat = [{
    `<` `optimizer` `=` $optimizer `,` `alignment` `=` $alignment `,`
    `budget` `=` $budget `,` `peak` `=` $peak `,` `arena` `=` $arena `,`
    `kept` `=` `[` $kept `]` `>`
  }];
}

#endif // GPIPE_DIALECT_GPIPE_IR_GPIPEATTRS_TD
