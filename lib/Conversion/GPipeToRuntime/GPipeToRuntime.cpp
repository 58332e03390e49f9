//===- GPipeToRuntime.cpp - Lower pipelines to runtime calls ----*- C++ -*-===//
//
// Implements `convert-gpipe-to-runtime`: a scheduled, memory-planned
// pipeline becomes LLVM-dialect functions that call the runtime's C ABI
// (the kernels of Kernels.def, gpipe/Runtime/Program.h for everything else)
// on buffers at the memory plan's offsets, plus the model's initial
// parameter data and, as the module's `gpipe.model` attribute, its
// metadata. See the pass description in Passes.td for the shape of the
// output and Emitter.h for the parts of the emitter.
//
// The kernel calls come from getKernelCall (KernelCalls.h), the mapping the
// nn interpreter executes too (same kernels, same shapes and attributes), so
// compiled and interpreted stages compute the same bits.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "gpipe/Conversion/Passes.h"

namespace mlir::gpipe {
#define GEN_PASS_DEF_CONVERTGPIPETORUNTIMEPASS
#include "gpipe/Conversion/Passes.h.inc"
} // namespace mlir::gpipe

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::lowering;

namespace {

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertGPipeToRuntimePass
    : public mlir::gpipe::impl::ConvertGPipeToRuntimePassBase<
          ConvertGPipeToRuntimePass> {
  using ConvertGPipeToRuntimePassBase::ConvertGPipeToRuntimePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<PipelineOp> pipelineOp = findPipeline(module, pipeline);
    if (failed(pipelineOp))
      return signalPassFailure();
    PipelineOp op = *pipelineOp;
    // The plan is read from the IR, never recomputed: the pipeline says
    // what it assumed, every program where its buffers live.
    if (!op.getMemoryPlanAttr())
      return emitPipelineError(op)
                 << "has no memory plan; run gpipe-plan-memory (or "
                    "gpipe-pipeline) first",
             signalPassFailure();
    for (ProgramOp program : op.getPrograms())
      if (!program.getArenaAttr())
        return mlir::emitError(program.getLoc())
                   << "rank " << program.getRankIndex()
                   << " has no arena; re-run gpipe-plan-memory",
               signalPassFailure();
    SymbolTableCollection symbols;
    FailureOr<PipelineSchedule> converted = toSchedule(op, &symbols);
    if (failed(converted))
      return signalPassFailure();

    std::string targetName = getTargetName(target);
    std::string precisionName = getPrecisionName(precision);
    Emitter emitter(module, op, *converted, source, targetName, precisionName);
    if (failed(emitter.run()))
      return signalPassFailure();

    // Only the LLVM dialect remains.
    for (Operation &other :
         llvm::make_early_inc_range(module.getBody()->getOperations()))
      if (other.getDialect() && other.getDialect()->getNamespace() != "llvm")
        other.erase();
  }
};

} // namespace
