//===- Evaluation.cpp - Evaluation programs inside a training library -----===//
//
// gpipe-compile --eval: a training library that also evaluates. The model is
// compiled twice, for training and as an inference pipeline, and the second
// joins the first as its evaluation programs:
//
//   - the inference pipeline is cut where training cut (the same layers on
//     every stage, so on every rank), with the same micro-batches;
//   - its buffers other than the parameters are planned above each rank's
//     training parameters, gradients and optimizer state (gpipe-plan-memory's
//     `reserve`), so it runs in the training arena between steps, reading
//     the parameters in place; the offsets of both pipelines' parameters are
//     checked to be the same, parameter by parameter;
//   - it is lowered as evaluation programs (gpipe_model_eval_rank_<r>) and
//     moved into the training module, its metadata the training metadata's
//     `eval`. convert-rt-to-llvm then lowers both at once.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Pipelines/Pipelines.h"

#include "gpipe/Conversion/PassOptions.h"
#include "gpipe/Conversion/Passes.h"
#include "gpipe/Dialect/GPipe/IR/GPipeDialect.h"
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Transforms/Transforms.h"
#include "gpipe/Dialect/GPipe/Utils/ModelMetadata.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;
using namespace mlir::gpipe;

namespace {

/// Per stage of `pipeline`, its forward's layers by name.
std::vector<std::vector<std::string>> getStageLayers(PipelineOp pipeline) {
  std::vector<std::vector<std::string>> layers;
  for (Attribute ref : pipeline.getStages()) {
    std::vector<std::string> names;
    auto stage = SymbolTable::lookupNearestSymbolFrom<StageOp>(
        pipeline, cast<FlatSymbolRefAttr>(ref));
    auto forward = stage ? SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
                               stage, stage.getForwardAttr())
                         : func::FuncOp();
    if (forward && !forward.isExternal())
      for (auto layer : forward.getBody().front().getOps<nn::LayerOp>())
        names.push_back(layer.getName().str());
    layers.push_back(std::move(names));
  }
  return layers;
}

bool isPersistentSlot(SlotKind kind) {
  return kind == SlotKind::Parameters || kind == SlotKind::Gradients ||
         kind == SlotKind::OptimizerState;
}

/// Per stage of planned `pipeline`, the offset of its parameters in its
/// rank's arena.
std::vector<int64_t> getParameterOffsets(PipelineOp pipeline) {
  std::vector<int64_t> offsets(size_t(pipeline.getNumStages()), 0);
  for (ProgramOp program : pipeline.getPrograms())
    for (SlotAttr slot : program.getArenaAttr().getSlots())
      if (slot.getKind() == SlotKind::Parameters && slot.getStage() >= 0 &&
          size_t(slot.getStage()) < offsets.size())
        offsets[size_t(slot.getStage())] = slot.getOffset();
  return offsets;
}

/// Per rank of planned `pipeline`, the end of its persistent slots.
std::vector<int64_t> getPersistentEnds(PipelineOp pipeline) {
  std::vector<int64_t> ends;
  for (ProgramOp program : pipeline.getPrograms()) {
    int64_t end = 0;
    for (SlotAttr slot : program.getArenaAttr().getSlots())
      if (isPersistentSlot(slot.getKind()))
        end = std::max(end, slot.getOffset() + slot.getSpan());
    ends.push_back(end);
  }
  return ends;
}

/// The module's only pipeline, with an error at the module otherwise.
FailureOr<PipelineOp> getPipeline(ModuleOp module) {
  return findPipeline(module, "");
}

/// Each rank's stages hold their parameters at the same offsets in both
/// metadata (`ranks[r].stages[i]`: stage, params_offset, params).
LogicalResult checkSameParameters(ModuleOp module, DictionaryAttr train,
                                  DictionaryAttr eval) {
  FailureOr<llvm::json::Value> t = attributeToJSON(train),
                               e = attributeToJSON(eval);
  auto ranksOf = [](const llvm::json::Value &v) {
    const llvm::json::Object *root = v.getAsObject();
    return root ? root->getArray("ranks") : nullptr;
  };
  const llvm::json::Array *tr = succeeded(t) ? ranksOf(*t) : nullptr;
  const llvm::json::Array *er = succeeded(e) ? ranksOf(*e) : nullptr;
  if (!tr || !er || tr->size() != er->size())
    return emitError(module.getLoc())
           << "--eval: the evaluation pipeline has other ranks than training";
  for (size_t r = 0; r < tr->size(); ++r) {
    const llvm::json::Object *a = (*tr)[r].getAsObject();
    const llvm::json::Object *b = (*er)[r].getAsObject();
    const llvm::json::Array *as = a ? a->getArray("stages") : nullptr;
    const llvm::json::Array *bs = b ? b->getArray("stages") : nullptr;
    if (!as || !bs || as->size() != bs->size())
      return emitError(module.getLoc())
             << "--eval: rank " << r
             << " holds other stages in the evaluation pipeline";
    for (size_t i = 0; i < as->size(); ++i) {
      const llvm::json::Object *x = (*as)[i].getAsObject();
      const llvm::json::Object *y = (*bs)[i].getAsObject();
      for (StringRef key : {"stage", "params_offset", "params"})
        if (!x || !y || x->get(key) == nullptr || y->get(key) == nullptr ||
            *x->get(key) != *y->get(key))
          return emitError(module.getLoc())
                 << "--eval: the evaluation pipeline's parameters of rank " << r
                 << " are not laid out as training's (" << key
                 << " differs); it cannot read them in place";
    }
  }
  return success();
}

/// Moves every op of `from`'s body into `into`'s. Both are in the gpipe_rt
/// form, whose symbols (stage functions named by their pipeline, the
/// programs by their kind) never clash; a clash is an error.
LogicalResult moveBody(ModuleOp into, ModuleOp from) {
  SymbolTable symbols(into);
  for (Operation &op : llvm::make_early_inc_range(*from.getBody())) {
    if (auto name =
            op.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName()))
      if (symbols.lookup(name))
        return emitError(op.getLoc())
               << "--eval: the evaluation programs' symbol @" << name.getValue()
               << " is already in the training module";
    op.moveBefore(into.getBody(), into.getBody()->end());
  }
  return success();
}

} // namespace

LogicalResult mlir::gpipe::compileWithEvaluation(
    ModuleOp module, const GPipeCompileOptions &options,
    llvm::function_ref<OwningOpRef<ModuleOp>()> loadInference,
    PassRunner runPasses) {
  Location loc = module.getLoc();
  if (options.inference)
    return emitError(loc) << "--eval adds evaluation programs to a training "
                             "library; an --inference library is "
                             "forward-only already";
  CompileStage stop = options.emit;
  if (stop == CompileStage::NN || stop == CompileStage::Pipeline ||
      stop == CompileStage::Scheduled)
    return emitError(loc)
           << "--eval needs --emit rt or later: the evaluation programs join "
              "the training library when it is lowered";
  if (options.target != TargetKind::CPU)
    return emitError(loc) << "--eval is not supported on the "
                          << getTargetName(options.target)
                          << " target yet: evaluate with a cpu library, or "
                             "run --predict on an --inference library";

  // Training, planned.
  if (failed(runPasses(module, [&](OpPassManager &pm) {
        buildGPipePlanningPasses(pm, options);
      })))
    return failure();
  FailureOr<PipelineOp> train = getPipeline(module);
  if (failed(train))
    return failure();
  if (train->getSchedule() == ScheduleKind::Custom)
    return emitError(loc)
           << "--eval is not supported with an imported schedule yet: the "
              "evaluation programs place their stages as a generated "
              "schedule does";
  std::vector<std::vector<std::string>> layers = getStageLayers(*train);

  // The inference pipeline, cut where training cut, planned above the
  // training's persistent slots.
  OwningOpRef<ModuleOp> eval = loadInference();
  if (!eval)
    return failure();
  // The same placement: the training schedule's, its stages per rank.
  GPipeCompileOptions evalOptions;
  evalOptions.stages = options.stages;
  evalOptions.microbatches = options.microbatches;
  evalOptions.schedule = train->getSchedule();
  evalOptions.virtualStages = train->getNumVirtualStages();
  evalOptions.granularity = options.granularity;
  evalOptions.fuse = options.fuse;
  evalOptions.profile = options.profile;
  evalOptions.profileFile = options.profileFile;
  evalOptions.machineFile = options.machineFile;
  evalOptions.memoryBudget = options.memoryBudget;
  evalOptions.sendBuffers = options.sendBuffers;
  evalOptions.target = options.target;
  evalOptions.precision = options.precision;
  evalOptions.gemm = options.gemm;
  evalOptions.emit = options.emit;
  evalOptions.quiet = true;
  evalOptions.inference = true;
  evalOptions.source = options.source;
  evalOptions.evaluation = true;
  SmallVector<int64_t> balance;
  for (const std::vector<std::string> &stage : layers)
    balance.push_back(int64_t(stage.size()));
  evalOptions.balance = balance;
  evalOptions.reserve = getPersistentEnds(*train);
  evalOptions.paramOffsets = getParameterOffsets(*train);
  if (failed(runPasses(*eval, [&](OpPassManager &pm) {
        buildGPipePlanningPasses(pm, evalOptions);
      })))
    return failure();
  FailureOr<PipelineOp> inference = getPipeline(*eval);
  if (failed(inference))
    return failure();
  std::vector<std::vector<std::string>> evalLayers = getStageLayers(*inference);
  for (size_t s = 0; s < layers.size(); ++s)
    if (s >= evalLayers.size() || evalLayers[s] != layers[s])
      return emitError(loc)
             << "--eval: stage " << s
             << " of the evaluation pipeline does not hold the layers it "
                "holds in training; the two imports of the model differ";
  if (!options.quiet) {
    llvm::outs() << "evaluation programs: forward-only, arena per rank";
    for (ProgramOp program : inference->getPrograms())
      llvm::outs() << " " << program.getArenaAttr().getSize();
    llvm::outs() << " bytes (the training parameters shared)\n";
  }

  // Both lowered to the gpipe_rt form, merged, then to LLVM together.
  if (failed(runPasses(module,
                       [&](OpPassManager &pm) {
                         buildGPipeLoweringPasses(pm, options,
                                                  /*throughLLVM=*/false);
                       })) ||
      failed(runPasses(*eval, [&](OpPassManager &pm) {
        buildGPipeLoweringPasses(pm, evalOptions, /*throughLLVM=*/false);
      })))
    return failure();
  StringRef key = GPipeDialect::kModelAttrName;
  auto trainMeta = module->getAttrOfType<DictionaryAttr>(key);
  auto evalMeta = (*eval)->getAttrOfType<DictionaryAttr>(key);
  if (!trainMeta || !evalMeta)
    return emitError(loc) << "--eval: a lowered module has no metadata";
  if (failed(checkSameParameters(module, trainMeta, evalMeta)) ||
      failed(moveBody(module, *eval)))
    return failure();
  NamedAttrList merged(trainMeta);
  merged.set("eval", evalMeta);
  module->setAttr(key, merged.getDictionary(module.getContext()));
  if (stop == CompileStage::RT)
    return success();
  return runPasses(module, [&](OpPassManager &pm) {
    pm.addPass(createConvertRTToLLVMPass());
  });
}
