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

def GPipe_ScheduleKind : I32EnumAttr<"ScheduleKind",
    "the schedule family of a pipeline",
    [GPipe_ScheduleGPipe, GPipe_Schedule1F1B, GPipe_ScheduleCustom]> {
  let cppNamespace = "::mlir::gpipe";
  let genSpecializedAttr = 0;
  // "1f1b" is not a bare keyword: print it quoted so that it parses back.
  let parameterPrinter =
      "$_printer.printKeywordOrString(" # symbolToStringFnName # "($_self))";
}

def GPipe_ScheduleKindAttr : EnumAttr<GPipe_Dialect, GPipe_ScheduleKind,
                                      "schedule"> {
  let summary = "Schedule family: gpipe, 1f1b or custom";
  let description = [{
    `gpipe` is fill-drain (all forwards, then all backwards), `1f1b` is
    non-interleaved one-forward-one-backward (PipeDream-flush), `custom` a
    schedule imported from a CSV file. `gpipe-schedule` generates the first
    two; all three are checked by `gpipe-verify-schedule`. `1f1b` is not a
    keyword and is printed quoted.

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

def GPipe_Remat : I32EnumAttr<"Remat",
    "what a stage keeps between its forward and its backward",
    [GPipe_RematNone, GPipe_RematStage]> {
  let cppNamespace = "::mlir::gpipe";
  let genSpecializedAttr = 0;
}

def GPipe_RematAttr : EnumAttr<GPipe_Dialect, GPipe_Remat, "remat"> {
  let summary = "Re-materialization policy: none or stage";
  let description = [{
    `none` keeps every activation of a micro-batch's forward until its
    backward; `stage` (GPipe's policy) keeps only the stage's boundary input
    and recomputes the forward during the backward.

    ```mlir
    gpipe.pipeline @train stages [@s0, @s1] microbatches 4 schedule gpipe remat none {
    }
    ```
  }];
  let assemblyFormat = "$value";
}

#endif // GPIPE_DIALECT_GPIPE_IR_GPIPEATTRS_TD
