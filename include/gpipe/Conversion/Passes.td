//===- Passes.td - gpipe conversion passes -----------------*- tablegen -*-===//
//
// Lowerings out of the nn and gpipe dialects.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_CONVERSION_PASSES_TD
#define GPIPE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertGPipeToRTPass : Pass<"convert-gpipe-to-rt", "::mlir::ModuleOp"> {
  let summary = "Lower a scheduled, memory-planned pipeline to calls into "
                "the gpipe runtime (the gpipe_rt form)";
  let description = [{
    Takes the output of `gpipe-pipeline` (a scheduled `gpipe.pipeline`
    planned by `gpipe-plan-memory`: `memory_plan` on the pipeline, an
    `arena` of slots on every program, a `gpipe.frame` on every stage
    function) and replaces the whole module with `func.func`s on addresses
    in the `gpipe_rt` form (`convert-rt-to-llvm` lowers it to the LLVM
    dialect). It reads every address from those attributes and plans
    nothing itself:

    - every stage's forward and backward become internal functions
      `(rank, mb, scratch, params, grads, first, args..., results...) -> i32`
      that make one `gpipe_rt.kernel` call per nn op on buffers at fixed
      offsets (the frame `gpipe-plan-memory` wrote: scratch values at their
      `gpipe.offsets`, a `gpipe.remat` region in place, the forward's output and the
      backward's input gradient computed in place into the buffers they are
      sent from, parameters in the rank's parameter buffer, constants as
      `gpipe_rt.bytes`); parameter gradients are accumulated into the
      rank's gradient buffer in micro-batch order (copy on the stage's first
      backward, add after), so the sums are bitwise the same for every
      partition; an `nn.fused` becomes `scf.for` loops of `arith`, `math`
      and `vector` ops;
    - every rank's `gpipe.program` becomes `gpipe_model_rank_<r>(rank,
      arena)` by conversion patterns: its `gpipe.for` loops `scf.for`,
      each action bracketed by `gpipe_rt.action_begin/end` with its index
      in the expanded program, with data loads, transfers, loss reports and
      optimizer steps as `gpipe_rt` calls on the slots of the program's
      arena (micro-batch m at copy m mod count);
    - `gpipe_model_abi_version` and `gpipe_model_data` (initial parameter
      values); the metadata (shapes, parameters, per-rank arena layout,
      programs with their loops, kernel call sites) becomes the module's
      `gpipe.model` dictionary, which translation to LLVM IR (lib/Target)
      writes out as the JSON of `gpipe_model_metadata`.

    `target=cuda` records `gpipe_rt.target = "cuda"` on the module: the
    calls go to the `gpipe_rt_cuda_*` library instead (same signatures,
    data pointers in device memory). The generated code then never reads
    or writes a buffer itself, it only passes addresses (the loss seed is
    written by the `fill_f32` kernel, the cross-entropy seed read by the
    kernel), and an `nn.fused` is refused.

    On the CPU target, `gemm` decides which implementation each GEMM shape
    runs on (gpipe/Analysis/GemmChoice.h) and records it as the metadata's
    `gemm`: `auto` compares the one-thread rates of OpenBLAS and libxsmm
    that `machine-file` measured, cell by cell of its shape grid (without
    them: OpenBLAS); `openblas` and `libxsmm` force one for every shape. `libxsmm` on a build without it is an error.

    `precision=bf16` computes every GEMM (nn.matmul, nn.gemm, nn.linear,
    forward and backward) with bf16 inputs and fp32 accumulation: the calls
    go to the `*_bf16` kernels, which round both operands to bf16 and
    accumulate and store in fp32. Buffers, parameters (the fp32 master
    weights), gradient accumulation and every other op stay fp32.

    Any nonzero status from a kernel reports the call site
    (`gpipe_rt.check ... site N`) and returns; a failing callback returns
    at once. Errors (unsupported op or element type, split backwards, a
    missing plan, a slot or frame the code needs and the plan lacks) are
    reported at the op, program or pipeline.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::gpipe_rt::RTDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
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
    Option<"gemm", "gemm", "::mlir::gpipe::GemmKind",
           /*default=*/"::mlir::gpipe::GemmKind::Auto",
           "CPU GEMM implementation per shape: auto (from machine-file's "
           "rates), openblas or libxsmm (the metadata's `gemm`)",
           "::mlir::gpipe::getGemmKindValues()">,
    Option<"machineFile", "machine-file", "std::string", /*default=*/"\"\"",
           "The machine profile whose GEMM rates gemm=auto compares">,
    Option<"evaluation", "evaluation", "bool", /*default=*/"false",
           "Lower a forward-only pipeline as the evaluation programs of a "
           "training library (gpipe-compile --eval): entry points "
           "gpipe_model_eval_rank_<r>, parameters described as shared with "
           "the training pipeline (init \"shared\", no data), no "
           "accessors">,
  ];
}

def ConvertRTToLLVMPass : Pass<"convert-rt-to-llvm", "::mlir::ModuleOp"> {
  let summary = "Lower the gpipe_rt form (with func, scf, cf, arith, math "
                "and vector) to the LLVM dialect";
  let description = [{
    The last step of the lowering: `gpipe_rt` ops become LLVM calls of the
    runtime (gpipe/Runtime/Program.h) and of the kernel library the
    module's `gpipe_rt.target` names (`gpipe_rt_<target>_<kernel>`),
    read-only globals (one per distinct content, 64-byte aligned) and
    element loads and stores; upstream's patterns lower the rest
    (`func.func` to `llvm.func`, keeping an `llvm.linkage` attribute).

    `scf` is lowered to `cf` first, because `gpipe_rt.check` leaves its
    function by a branch to a failure block (one per function and kind),
    which calls `gpipe_rt_kernel_error` for a kernel's call site and
    returns the status.

    ```mlir
    func.func @f(%rank: !llvm.ptr, %x: !llvm.ptr) -> i32 {
      %n = arith.constant 8 : i64
      %s = gpipe_rt.kernel "fill_f32"(%x, %n, %one) : (!llvm.ptr, i64, f32) -> i32
      gpipe_rt.check %s site 0 of %rank
      ...
    ```
    becomes a call of `gpipe_rt_cpu_fill_f32` followed by a conditional
    branch to a block that calls `gpipe_rt_kernel_error(%rank, 0, %s)` and
    returns `%s`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::cf::ControlFlowDialect"];
}

#endif // GPIPE_CONVERSION_PASSES_TD
