//===- Passes.td - Passes that evaluate nn ops on the host -*- tablegen -*-===//
//
// Passes built on the reference interpreter.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_INTERPRETER_PASSES_TD
#define GPIPE_INTERPRETER_PASSES_TD

include "mlir/Pass/PassBase.td"

def NNFoldConstantsPass : Pass<"nn-fold-constants"> {
  let summary = "Evaluate every nn op that depends on constants only";
  let description = [{
    A static-shape network computes much at compile time that an exporter
    left in the graph: causal masks from position ranges, rotary tables
    (`sin`, `cos` of positions times frequencies), masks compared against
    buffers. Every op of the `nn` dialect whose operands are all
    `nn.constant`s (parameters are not constants) is run once by the nn
    interpreter, on the same kernels a compiled model runs, and replaced by
    an `nn.constant` of its results; what it fed then folds in turn. One
    mechanism for every op: no op has a folder of its own here. Ops that
    draw random numbers (`nn.dropout`) and ops with regions are left alone,
    as are results of more than `max-elements` elements.

    Before:
    ```mlir
    %p = nn.constant dense<[0, 1, 2]> : tensor<3xi64>
    %m = nn.compare le, %p, %q : (tensor<3xi64>, tensor<3x1xi64>) -> tensor<3x3xi1>
    ```
    After:
    ```mlir
    %m = nn.constant dense<[[true, false, false], ...]> : tensor<3x3xi1>
    ```
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"1 << 24",
           "Largest result (in elements) to fold">,
  ];
}

#endif // GPIPE_INTERPRETER_PASSES_TD
