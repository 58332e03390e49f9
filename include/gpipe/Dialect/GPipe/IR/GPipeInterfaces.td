//===- GPipeInterfaces.td - gpipe dialect interfaces -------*- tablegen -*-===//
//
// `ActionOpInterface`: what every op of a rank's program answers, so that the
// schedule conversion, the verifier and the lowering treat the action ops
// uniformly.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_IR_GPIPEINTERFACES_TD
#define GPIPE_DIALECT_GPIPE_IR_GPIPEINTERFACES_TD

include "mlir/IR/OpBase.td"

def GPipe_ActionOpInterface : OpInterface<"ActionOpInterface"> {
  let cppNamespace = "::mlir::gpipe";
  let description = [{
    An action of a rank's program: one entry of a PyTorch-style pipeline
    schedule. It names the stage it runs for (a `gpipe.stage` symbol of the
    enclosing pipeline), its micro-batch (none for `gpipe.reduce_grad` and
    `gpipe.step`), and for sends and receives the peer rank. The interface's
    verifier checks what is common to all actions: the op sits in a
    `gpipe.program`, its stage is one of the pipeline's, its micro-batch is
    in range (for every iteration of the loop it sits in).
  }];
  let methods = [
    InterfaceMethod<
      "The action's kind in the schedule vocabulary (F, B, SEND_F, ...)",
      "::mlir::gpipe::ActionKind", "getActionKind">,
    InterfaceMethod<"The symbol of the stage the action runs for",
      "::mlir::FlatSymbolRefAttr", "getStageSymbol", (ins),
      [{ return $_op.getStageAttr(); }]>,
    InterfaceMethod<[{
        The loop variable the micro-batch counts from, or null: the
        micro-batch is then the constant getMicrobatchOffset()
      }], "::mlir::Value", "getMicrobatchBase", (ins), [{}],
      [{ return ::mlir::Value(); }]>,
    InterfaceMethod<[{
        The constant part of the micro-batch (all of it without a base), or
        -1 when the action has none
      }], "int64_t", "getMicrobatchOffset", (ins), [{}], [{ return -1; }]>,
    InterfaceMethod<"The rank at the other end of a transfer, else -1",
      "int64_t", "getPeerRank", (ins), [{}], [{ return -1; }]>,
  ];
  let verify = [{ return ::mlir::gpipe::detail::verifyActionOp($_op); }];
}

#endif // GPIPE_DIALECT_GPIPE_IR_GPIPEINTERFACES_TD
