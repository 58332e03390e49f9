//===- GPipeBase.td - gpipe dialect definition -------------*- tablegen -*-===//
//
// The `gpipe` dialect: the pipeline. Stage declarations that name each
// stage's per-micro-batch forward and backward functions, and a pipeline op
// that holds, per rank, the ordered program of actions that rank runs.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_IR_GPIPEBASE_TD
#define GPIPE_DIALECT_GPIPE_IR_GPIPEBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def GPipe_Dialect : Dialect {
  let name = "gpipe";
  let cppNamespace = "::mlir::gpipe";
  let summary = "Pipeline-parallel structure and per-rank schedules";
  let description = [{
    The `gpipe` dialect describes a pipeline-parallel training step compactly:
    its size is O(K + layers + periods), independent of M.

    - `gpipe.stage` declares stage k: the `func.func` that runs its forward on
      one micro-batch and the one that runs its backward (which recomputes the
      forward from the stage's boundary input), plus the activation types at
      its two boundaries.
    - `gpipe.pipeline` names its stages in order and the number of
      micro-batches, and holds one `gpipe.program` per rank once scheduled.
    - A program is the ordered list of actions its rank runs, each periodic
      run of them a `gpipe.for` loop over micro-batches, in the
      vocabulary of PyTorch's pipelining schedule IR: `gpipe.forward` (F),
      `gpipe.backward` (B), `gpipe.backward_input` (I) and
      `gpipe.backward_weight` (W), `gpipe.recompute` (R), `gpipe.send` and
      `gpipe.recv` (SEND_F/SEND_B, RECV_F/RECV_B), `gpipe.reduce_grad`
      (REDUCE_GRAD) and `gpipe.step` (STEP).

    - `gpipe.remat` shows, inside a backward function, the forward it
      re-runs (GPipe's re-materialization).
    - The memory plan is typed attributes: `#gpipe.memory_plan` on the
      pipeline, `#gpipe.arena` with its `#gpipe.slot`s on each program,
      `gpipe.frame` and `gpipe.offsets` on the stage functions.

    An action's only SSA value is its micro-batch (the loop's `%mb` plus a
    constant, or a constant): its data lives in the slot of its (stage,
    micro-batch), copy mb mod count of the slot the planner placed in the
    rank's arena. The actions' order is the schedule; `gpipe-verify-schedule`
    proves it complete and deadlock-free.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// `gpipe.frame` on a stage function, `gpipe.offsets` on an op of one.
    static constexpr ::llvm::StringLiteral kFrameAttrName = "gpipe.frame";
    static constexpr ::llvm::StringLiteral kOffsetsAttrName = "gpipe.offsets";
    /// `gpipe.model` on a lowered module: the metadata of the compiled
    /// model (Program.h) as a dictionary, written out as JSON at
    /// translation.
    static constexpr ::llvm::StringLiteral kModelAttrName = "gpipe.model";
  }];
}

class GPipe_Op<string mnemonic, list<Trait> traits = []>
    : Op<GPipe_Dialect, mnemonic, traits>;

#endif // GPIPE_DIALECT_GPIPE_IR_GPIPEBASE_TD
