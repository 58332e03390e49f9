//===- Passes.td - gpipe conversion passes -----------------*- tablegen -*-===//
//
// Lowerings out of the nn and gpipe dialects.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_CONVERSION_PASSES_TD
#define GPIPE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertGPipeToRuntimePass : Pass<"convert-gpipe-to-runtime",
                                     "::mlir::ModuleOp"> {
  let summary = "Lower a scheduled, memory-planned pipeline to calls into "
                "the gpipe runtime (LLVM dialect)";
  let description = [{
    Takes the output of `gpipe-pipeline` (a scheduled `gpipe.pipeline`
    planned by `gpipe-plan-memory`: `memory_plan` on the pipeline, an
    `arena` of slots on every program, a `gpipe.frame` on every stage
    function) and replaces the whole module with LLVM-dialect code against
    the runtime ABI of runtime/include/gpipe/Runtime/Program.h. It reads
    every address from those attributes and plans nothing itself:

    - every stage's forward and backward become internal functions
      `(rank, mb, scratch, params, grads, first, args..., results...) -> i32`
      that call one `gpipe_rt_cpu_*` kernel per nn op on buffers at fixed
      offsets (the frame `gpipe-plan-memory` wrote: scratch values at their
      `gpipe.offsets`, a `gpipe.remat` region in place, the forward's output and the
      backward's input gradient computed in place into the buffers they are
      sent from, parameters in the rank's parameter buffer, constants as
      read-only globals); parameter gradients are accumulated into the
      rank's gradient buffer in micro-batch order (copy on the stage's first
      backward, add after), so the sums are bitwise the same for every
      partition;
    - every rank's `gpipe.program` becomes `gpipe_model_rank_<r>(rank,
      arena)`: its actions in order, its `gpipe.for` loops kept as loops,
      each action bracketed by `gpipe_rt_action_begin/end` with its index
      in the expanded program, with data loads, transfers, loss reports and
      optimizer steps as runtime calls on the slots of the program's arena
      (micro-batch m at copy m mod count);
    - `gpipe_model_abi_version` and `gpipe_model_data` (initial parameter
      values); the metadata (shapes, parameters, per-rank arena layout,
      programs with their loops, kernel call sites) becomes the module's
      `gpipe.model` dictionary, which translation to LLVM IR (lib/Target)
      writes out as the JSON of `gpipe_model_metadata`.

    `target=cuda` calls the `gpipe_rt_cuda_*` library instead (same
    signatures, data pointers in device memory): the generated code never
    reads or writes a buffer itself, it only passes addresses (the loss
    seed is written by `gpipe_rt_*_fill_f32`, the cross-entropy seed read
    by the kernel).

    `precision=bf16` computes every GEMM (nn.matmul, nn.gemm, nn.linear,
    forward and backward) with bf16 inputs and fp32 accumulation: the calls
    go to the `*_bf16` kernels, which round both operands to bf16 and
    accumulate and store in fp32. Buffers, parameters (the fp32 master
    weights), gradient accumulation and every other op stay fp32.

    Any nonzero status from a kernel reports the call site through
    `gpipe_rt_kernel_error` and returns; a failing callback returns at once.
    Errors (unsupported op or element type, split backwards, a missing
    plan, a slot or frame the code needs and the plan lacks) are reported
    at the op, program or pipeline.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
  let options = [
    Option<"pipeline", "pipeline", "std::string", /*default=*/"\"\"",
           "The pipeline to lower (default: the module's only one)">,
    Option<"source", "source", "std::string", /*default=*/"\"\"",
           "What the model was compiled from, for the metadata">,
    Option<"target", "target", "::mlir::gpipe::TargetKind",
           /*default=*/"::mlir::gpipe::TargetKind::CPU",
           "Kernel library: cpu (gpipe_rt_cpu_*) or cuda (gpipe_rt_cuda_*)",
           "::mlir::gpipe::getTargetKindValues()">,
    Option<"precision", "precision", "::mlir::gpipe::PrecisionKind",
           /*default=*/"::mlir::gpipe::PrecisionKind::FP32",
           "GEMM precision: fp32, or bf16 (bf16 inputs, fp32 accumulation)",
           "::mlir::gpipe::getPrecisionKindValues()">,
  ];
}

#endif // GPIPE_CONVERSION_PASSES_TD
