//===- RTOps.td - gpipe_rt dialect ops ---------------------*- tablegen -*-===//
//
// The ops of the `gpipe_rt` dialect: addresses and read-only data, kernel
// calls verified against Kernels.def, one op per runtime callback, the
// status check, and the element loads and stores of fused loops.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_RT_IR_RTOPS_TD
#define GPIPE_DIALECT_RT_IR_RTOPS_TD

include "gpipe/Dialect/RT/IR/RTBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/CommonTypeConstraints.td"

//===----------------------------------------------------------------------===//
// Addresses and read-only data
//===----------------------------------------------------------------------===//

def RT_OffsetOp : RT_Op<"offset", [Pure]> {
  let summary = "An address some bytes past another";
  let description = [{
    `base + dynamic + bytes`, in bytes: where a planned buffer lives in the
    region `base` points to. `dynamic` (optional) is the part only known at
    run time, such as the copy of a micro-batch's slot.

    ```mlir
    %w = gpipe_rt.offset %params[1024]
    %in = gpipe_rt.offset %arena[%copy + 25600]
    ```
  }];
  let arguments = (ins RT_Ptr:$base, Optional<I64>:$dynamic,
                       I64Attr:$bytes);
  let results = (outs RT_Ptr:$result);
  let hasCustomAssemblyFormat = 1;
  let hasFolder = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Value":$base, "::mlir::Value":$dynamic,
                   "int64_t":$bytes), [{
      build($_builder, $_state, ::mlir::LLVM::LLVMPointerType::get($_builder.getContext()), base, dynamic,
            $_builder.getI64IntegerAttr(bytes));
    }]>,
  ];
}

def RT_NullOp : RT_Op<"null", [Pure]> {
  let summary = "The null address";
  let description = [{
    What an optional buffer left out, or a result a callee does not write,
    is passed as.

    ```mlir
    %none = gpipe_rt.null
    ```
  }];
  let results = (outs RT_Ptr:$result);
  let assemblyFormat = "attr-dict";
  let builders = [
    OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::LLVM::LLVMPointerType::get($_builder.getContext())); }]>,
  ];
}

def RT_BytesOp : RT_Op<"bytes", [Pure]> {
  let summary = "The address of read-only bytes";
  let description = [{
    Read-only data in the library, aligned to 64 bytes: a constant tensor
    (the bytes of its elements, row-major) or the model's initial
    parameters. Equal bytes share one copy.

    ```mlir
    %c = gpipe_rt.bytes "\00\00\80?\00\00\00@"
    ```
  }];
  let arguments = (ins StrAttr:$value);
  let results = (outs RT_Ptr:$result);
  let assemblyFormat = "$value attr-dict";
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$value), [{
      build($_builder, $_state, ::mlir::LLVM::LLVMPointerType::get($_builder.getContext()), value);
    }]>,
  ];
}

def RT_IntsOp : RT_Op<"ints", [Pure]> {
  let summary = "The address of a read-only int64 array";
  let description = [{
    A shape, a permutation or a list of strides a kernel reads.

    ```mlir
    %shape = gpipe_rt.ints [8, 64]
    ```
  }];
  let arguments = (ins DenseI64ArrayAttr:$values);
  let results = (outs RT_Ptr:$result);
  let assemblyFormat = "$values attr-dict";
  let builders = [
    OpBuilder<(ins "::llvm::ArrayRef<int64_t>":$values), [{
      build($_builder, $_state, ::mlir::LLVM::LLVMPointerType::get($_builder.getContext()), values);
    }]>,
  ];
}

def RT_PtrArrayOp : RT_Op<"ptr_array"> {
  let summary = "An array of addresses on the stack";
  let description = [{
    The address of an array holding `elements` in order: how a kernel with
    a variable number of operands (concat, split) receives them. Valid
    until the enclosing function returns.

    ```mlir
    %parts = gpipe_rt.ptr_array %a, %b
    ```
  }];
  let arguments = (ins Variadic<RT_Ptr>:$elements);
  let results = (outs RT_Ptr:$result);
  let assemblyFormat = "$elements attr-dict";
  let builders = [
    OpBuilder<(ins "::mlir::ValueRange":$elements), [{
      build($_builder, $_state, ::mlir::LLVM::LLVMPointerType::get($_builder.getContext()), elements);
    }]>,
  ];
}

//===----------------------------------------------------------------------===//
// Kernel calls and status checks
//===----------------------------------------------------------------------===//

def RT_KernelOp : RT_Op<"kernel"> {
  let summary = "Calls one kernel of Kernels.def";
  let description = [{
    Calls kernel `kernel` of the module's kernel library with `args`, in
    the order and with the types its Kernels.def signature gives (a buffer
    is an address; integers are `i32` or `i64`, reals `f32` or `f64`); the
    verifier checks both. Returns the kernel's status: 0, or the error a
    following `gpipe_rt.check` reports.

    ```mlir
    %s = gpipe_rt.kernel "copy"(%dtype, %src, %dst, %count)
        : (i32, !llvm.ptr, !llvm.ptr, i64) -> i32
    ```
  }];
  let arguments = (ins StrAttr:$kernel, Variadic<AnyType>:$args);
  let results = (outs I32:$status);
  let assemblyFormat =
      "$kernel `(` $args `)` attr-dict `:` functional-type($args, results)";
  let hasVerifier = 1;
}

def RT_CheckOp : RT_Op<"check"> {
  let summary = "Returns a failed status from the enclosing function";
  let description = [{
    When `status` is nonzero, the enclosing function (which returns an
    `i32` status) returns it at once; with `site`, it first reports the
    failure of kernel call site `site` (an index into the metadata's
    `sites`) through `gpipe_rt_kernel_error(rank, site, status)`. It is to
    a status what `cf.assert` is to a condition, and lowers the same way:
    a branch to a block that returns.

    ```mlir
    gpipe_rt.check %s site 3 of %rank
    gpipe_rt.check %begin
    ```
  }];
  let arguments = (ins I32:$status, OptionalAttr<I64Attr>:$site,
                       Optional<RT_Ptr>:$rank);
  let assemblyFormat = "$status (`site` $site^ `of` $rank)? attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Runtime callbacks (gpipe/Runtime/Program.h), one op each
//===----------------------------------------------------------------------===//

/// An op that calls the runtime function `function` with its operands, in
/// order, and returns its result (if any).
class RT_CallbackOp<string mnemonic, string function, string summaryText,
                    string descriptionText, dag ins, dag outs = (outs)>
    : RT_Op<mnemonic> {
  let summary = summaryText;
  let description = descriptionText # [{

    Calls `}] # function # [{` (gpipe/Runtime/Program.h).
  }];
  let arguments = ins;
  let results = outs;
  let assemblyFormat = "operands attr-dict";
  let extraClassDeclaration = [{
    /// The runtime function this op calls.
    static constexpr ::llvm::StringLiteral kFunction = "}] # function # [{";
  }];
}

def RT_ActionBeginOp : RT_CallbackOp<"action_begin", "gpipe_rt_action_begin",
    "Action `action` of the rank's program starts", [{
    `action` is the action's index in the expanded program. A nonzero
    status means the run is being aborted (another rank failed).

    ```mlir
    %s = gpipe_rt.action_begin %rank, %index
    ```
  }], (ins RT_Ptr:$rank, I64:$action), (outs I32:$status)>;

def RT_ActionEndOp : RT_CallbackOp<"action_end", "gpipe_rt_action_end",
    "Action `action` of the rank's program ends", [{
    ```mlir
    gpipe_rt.action_end %rank, %index
    ```
  }], (ins RT_Ptr:$rank, I64:$action)>;

def RT_LayerOp : RT_CallbackOp<"layer", "gpipe_rt_layer",
    "A per-layer timing mark", [{
    The code that follows runs layer `mark / 2` (recomputing it when `mark`
    is odd).

    ```mlir
    gpipe_rt.layer %rank, %mark
    ```
  }], (ins RT_Ptr:$rank, I64:$mark)>;

def RT_RngKeyOp : RT_CallbackOp<"rng_key", "gpipe_rt_rng_key",
    "The random key of a micro-batch of the current step", [{
    ```mlir
    %key = gpipe_rt.rng_key %rank, %mb
    ```
  }], (ins RT_Ptr:$rank, I64:$microbatch), (outs I64:$key)>;

def RT_LoadInputOp : RT_CallbackOp<"load_input", "gpipe_rt_load_input",
    "Copies a micro-batch of the step's input into a buffer", [{
    ```mlir
    %s = gpipe_rt.load_input %rank, %mb, %in, %bytes
    ```
  }], (ins RT_Ptr:$rank, I64:$microbatch, RT_Ptr:$data, I64:$bytes),
  (outs I32:$status)>;

def RT_LoadLabelsOp : RT_CallbackOp<"load_labels", "gpipe_rt_load_labels",
    "Copies a micro-batch of the step's labels into a buffer", [{
    ```mlir
    %s = gpipe_rt.load_labels %rank, %mb, %labels, %bytes
    ```
  }], (ins RT_Ptr:$rank, I64:$microbatch, RT_Ptr:$data, I64:$bytes),
  (outs I32:$status)>;

def RT_SendOp : RT_CallbackOp<"send", "gpipe_rt_send",
    "Sends a buffer to the peer of a transfer action", [{
    The metadata of action `action` names the peer and the tag. Returns
    once the receiver has the bytes, or, when `staging` is not null (the
    send's copy of its slot's staging copies in the arena), possibly once
    they are in the staging copy.

    ```mlir
    %s = gpipe_rt.send %rank, %index, %out, %bytes, %staging
    ```
  }], (ins RT_Ptr:$rank, I64:$action, RT_Ptr:$data, I64:$bytes,
       RT_Ptr:$staging),
  (outs I32:$status)>;

def RT_RecvOp : RT_CallbackOp<"recv", "gpipe_rt_recv",
    "Receives a buffer from the peer of a transfer action", [{
    ```mlir
    %s = gpipe_rt.recv %rank, %index, %in, %bytes
    ```
  }], (ins RT_Ptr:$rank, I64:$action, RT_Ptr:$data, I64:$bytes),
  (outs I32:$status)>;

def RT_ReportLossOp : RT_CallbackOp<"report_loss", "gpipe_rt_report_loss",
    "Hands a micro-batch's loss to the runtime", [{
    ```mlir
    %s = gpipe_rt.report_loss %rank, %mb, %loss
    ```
  }], (ins RT_Ptr:$rank, I64:$microbatch, RT_Ptr:$loss), (outs I32:$status)>;

def RT_ReportOutputOp : RT_CallbackOp<"report_output",
    "gpipe_rt_report_output",
    "Hands a micro-batch's prediction to the runtime", [{
    ```mlir
    %s = gpipe_rt.report_output %rank, %mb, %logits, %bytes
    ```
  }], (ins RT_Ptr:$rank, I64:$microbatch, RT_Ptr:$data, I64:$bytes),
  (outs I32:$status)>;

def RT_StepOp : RT_CallbackOp<"step", "gpipe_rt_optimizer_step",
    "Applies the optimizer to a stage's parameters", [{
    `count` parameters of stage `stage` at `params`, with their gradients
    and the optimizer state the plan reserved (null when none).

    ```mlir
    %s = gpipe_rt.step %rank, %stage, %params, %grads, %state, %count
    ```
  }], (ins RT_Ptr:$rank, I64:$stage, RT_Ptr:$params, RT_Ptr:$grads,
           RT_Ptr:$state, I64:$count), (outs I32:$status)>;

def RT_ReduceGradOp : RT_CallbackOp<"reduce_grad", "gpipe_rt_reduce_grad",
    "Starts summing a stage's gradients over the data-parallel replicas", [{
    ```mlir
    %s = gpipe_rt.reduce_grad %rank, %index, %grads, %scratch, %count
    ```
  }], (ins RT_Ptr:$rank, I64:$action, RT_Ptr:$grads, RT_Ptr:$scratch,
           I64:$count), (outs I32:$status)>;

def RT_SumTiedOp : RT_CallbackOp<"sum_tied", "gpipe_rt_sum_tied",
    "Sums the gradients of tied parameter copies", [{
    ```mlir
    %s = gpipe_rt.sum_tied %rank, %index, %scratch
    ```
  }], (ins RT_Ptr:$rank, I64:$action, RT_Ptr:$scratch), (outs I32:$status)>;

def RT_ClipGradOp : RT_CallbackOp<"clip_grad", "gpipe_rt_clip_grad",
    "Scales the rank's gradients to the global norm bound", [{
    The rank's part of the global gradient norm: it receives the running
    sum of squares at `norm` (the plan's Norm slot, 16 bytes), adds its
    stages' parameters, hands it on, receives the total and scales its
    gradients.

    ```mlir
    %s = gpipe_rt.clip_grad %rank, %index, %norm
    ```
  }], (ins RT_Ptr:$rank, I64:$action, RT_Ptr:$norm), (outs I32:$status)>;

//===----------------------------------------------------------------------===//
// Elements (fused loops)
//===----------------------------------------------------------------------===//

def RT_ElementType : AnyTypeOf<[F32, I8, VectorOfRankAndType<[1], [F32, I8]>]>;

def RT_LoadOp : RT_Op<"load"> {
  let summary = "Reads elements of a buffer";
  let description = [{
    Reads the element (or the vector of consecutive elements) at element
    index `index` of the buffer at `base`, whose elements have the
    result's element type (`f32`, or `i8` for a boolean).

    ```mlir
    %x = gpipe_rt.load %in[%i] : vector<8xf32>
    ```
  }];
  let arguments = (ins RT_Ptr:$base, I64:$index);
  let results = (outs RT_ElementType:$result);
  let assemblyFormat = "$base `[` $index `]` attr-dict `:` type($result)";
}

def RT_StoreOp : RT_Op<"store"> {
  let summary = "Writes elements of a buffer";
  let description = [{
    Writes `value` at element index `index` of the buffer at `base`.

    ```mlir
    gpipe_rt.store %y, %out[%i] : vector<8xf32>
    ```
  }];
  let arguments = (ins RT_ElementType:$value, RT_Ptr:$base, I64:$index);
  let assemblyFormat =
      "$value `,` $base `[` $index `]` attr-dict `:` type($value)";
}

def RT_FusedRowsOp : RT_Op<"fused_rows"> {
  let summary = "Runs a fused loop's rows, split over the kernel threads";
  let description = [{
    Runs rows [0, `rows`) of the outlined fused loop `callee` (a function
    `(argv, first row, end row)` whose rows are independent, each of
    `row_elements` elements) on its argument array `argv`: a call of the
    CPU library's `gpipe_rt_cpu_fused_rows`, which splits the rows over
    the rank's kernel threads where there are enough of them, and runs
    them on the calling thread otherwise. Each row is computed by the same
    code whichever thread runs it.

    ```mlir
    gpipe_rt.fused_rows @__gpipe_fused.train_s0_fwd.0(%argv) rows 256 row_elements 64
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, RT_Ptr:$argv,
                       I64Attr:$rows, I64Attr:$row_elements);
  let assemblyFormat = [{
    $callee `(` $argv `)` `rows` $rows `row_elements` $row_elements attr-dict
  }];
}

#endif // GPIPE_DIALECT_RT_IR_RTOPS_TD
