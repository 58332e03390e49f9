//===- GPipeToRT.cpp - Lower pipelines to runtime calls ---------*- C++ -*-===//
//
// Implements `convert-gpipe-to-rt`: a scheduled, memory-planned pipeline
// becomes `func.func`s in the `gpipe_rt` form that call the runtime (the
// kernels of Kernels.def, gpipe/Runtime/Program.h for everything else) on
// buffers at the memory plan's offsets, plus the model's initial parameter
// data and, as the module's `gpipe.model` attribute, its metadata;
// `convert-rt-to-llvm` takes it from there. See the pass description in
// Passes.td for the shape of the output and Emitter.h for the parts of the
// emitter.
//
// The kernel calls come from getKernelCall (KernelCalls.h), the mapping the
// nn interpreter executes too (same kernels, same shapes and attributes), so
// compiled and interpreted stages compute the same bits.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "gpipe/Analysis/CostModel.h"
#include "gpipe/Conversion/Passes.h"

#include "llvm/ADT/SmallVectorExtras.h"

namespace mlir::gpipe {
#define GEN_PASS_DEF_CONVERTGPIPETORTPASS
#include "gpipe/Conversion/Passes.h.inc"
} // namespace mlir::gpipe

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::lowering;

namespace {

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertGPipeToRTPass
    : public mlir::gpipe::impl::ConvertGPipeToRTPassBase<ConvertGPipeToRTPass> {
  using ConvertGPipeToRTPassBase::ConvertGPipeToRTPassBase;

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
    FailureOr<const PipelineSchedule *> converted =
        getAnalysis<ScheduleAnalysis>().getSchedule(op);
    if (failed(converted))
      return signalPassFailure();

    // What the module held before: the stage functions on tensors, the
    // stages, the pipeline and the parameter declarations. The emitter
    // appends its functions after them; then only those remain.
    auto input = llvm::map_to_vector(module.getBody()->getOperations(),
                                     [](Operation &other) { return &other; });
    if (evaluation && !op.isForwardOnly())
      return emitPipelineError(op)
                 << "is a training pipeline; only a forward-only one is "
                    "lowered as evaluation programs",
             signalPassFailure();
    Emitter emitter(module, op, **converted, source, target, precision,
                    evaluation);
    if (target == TargetKind::CPU) {
      std::string error;
      std::shared_ptr<const MachineModel> machine;
      if (!machineFile.empty() &&
          !(machine = MachineModel::load(machineFile, error)))
        return mlir::emitError(op.getLoc()) << error, signalPassFailure();
      std::optional<GemmChoice> choice =
          chooseGemms(gemm, machine.get(), error);
      if (!choice)
        return mlir::emitError(op.getLoc()) << error, signalPassFailure();
      emitter.setGemmChoice(std::move(*choice));
    } else if (gemm == GemmKind::Libxsmm) {
      return mlir::emitError(op.getLoc())
                 << "gemm=libxsmm chooses CPU GEMMs; this lowering is for "
                 << getTargetName(target),
             signalPassFailure();
    }
    if (failed(emitter.run()))
      return signalPassFailure();
    for (Operation *other : input)
      other->erase();
    module->setAttr(
        gpipe_rt::RTDialect::kTargetAttrName,
        StringAttr::get(module.getContext(), getTargetName(target)));
  }
};

} // namespace
