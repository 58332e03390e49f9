//===- RTBase.td - gpipe_rt dialect definition -------------*- tablegen -*-===//
//
// The `gpipe_rt` dialect: calls into the gpipe runtime, between the `gpipe`
// and `nn` dialects (what to run) and the LLVM dialect (how the call is
// made).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_RT_IR_RTBASE_TD
#define GPIPE_DIALECT_RT_IR_RTBASE_TD

include "mlir/IR/OpBase.td"

def RT_Dialect : Dialect {
  let name = "gpipe_rt";
  let cppNamespace = "::mlir::gpipe_rt";
  let summary = "Calls into the gpipe runtime on planned buffers";
  let description = [{
    The `gpipe_rt` dialect is the form a scheduled, memory-planned pipeline
    takes once every decision is made: `convert-gpipe-to-rt` writes it and
    `convert-rt-to-llvm` lowers it. Everything in it is an address, an
    integer or a status:

    - buffers are `!llvm.ptr` addresses: a function argument (the rank's
      arena, a stage function's scratch region, parameters, gradients, its
      inputs and results), `gpipe_rt.offset` of one, read-only data
      (`gpipe_rt.bytes`, `gpipe_rt.ints`), an array of them
      (`gpipe_rt.ptr_array`) or `gpipe_rt.null`;
    - `gpipe_rt.kernel` calls one kernel of Kernels.def, its operands
      verified against the kernel's signature;
    - one op per runtime callback of gpipe/Runtime/Program.h: action
      bracketing, data loading, transfers, loss and output reports, the
      optimizer step, the gradient reductions, layer marks, random keys;
    - `gpipe_rt.check` returns a nonzero status from the enclosing function
      (reporting the kernel's call site first), as `cf.assert` aborts;
    - `gpipe_rt.load` and `gpipe_rt.store` read and write the elements the
      fused elementwise loops compute on; each loop nest is a function of
      its own, `__gpipe_fused.<stage function>.<n>(argv, first row, end
      row)`, called with a `gpipe_rt.ptr_array` of its inputs' and
      results' addresses.

    The rest is upstream: stage functions and rank programs are `func.func`
    returning an `i32` status, micro-batch and element loops are `scf.for`
    over `i64`, arithmetic is `arith`, `math` and `vector`.

    Which kernel library the calls bind to is the module's
    `gpipe_rt.target` attribute (`"cpu"` when absent): kernel `K` is the
    function `gpipe_rt_<target>_K`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
  let extraClassDeclaration = [{
    /// The module attribute naming the kernel library ("cpu", "cuda").
    static constexpr ::llvm::StringLiteral kTargetAttrName = "gpipe_rt.target";
    /// The name prefix of a fused elementwise loop outlined from its stage
    /// function (`__gpipe_fused.<stage function>.<n>`): the functions the
    /// code generator optimizes (lib/Target).
    static constexpr ::llvm::StringLiteral kFusedLoopPrefix = "__gpipe_fused.";
  }];
}

class RT_Op<string mnemonic, list<Trait> traits = []>
    : Op<RT_Dialect, mnemonic, traits>;

/// An address: LLVM's opaque pointer.
def RT_Ptr : Type<CPred<"::llvm::isa<::mlir::LLVM::LLVMPointerType>($_self)">,
                  "address", "::mlir::LLVM::LLVMPointerType">,
             BuildableType<
                 "::mlir::LLVM::LLVMPointerType::get($_builder.getContext())">;

#endif // GPIPE_DIALECT_RT_IR_RTBASE_TD
