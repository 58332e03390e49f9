//===- Pipelines.cpp - gpipe's pass pipelines -----------------------------===//
//
// Builds the pipeline-compiler pass pipeline from its options. gpipe-opt
// registers it as `gpipe-pipeline`; the compile driver calls
// buildGPipePipeline directly, so there is exactly one copy.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Pipelines/Pipelines.h"

#include "gpipe/Dialect/GPipe/Transforms/Passes.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::gpipe::buildGPipePipeline(OpPassManager &pm,
                                     const GPipePipelineOptions &options,
                                     bool partitionOnly) {
  pm.addPass(createCanonicalizerPass());

  nn::NNFormLayersPassOptions layers;
  layers.granularity = options.granularity;
  pm.addNestedPass<func::FuncOp>(nn::createNNFormLayersPass(layers));

  nn::NNAttachLossPassOptions loss;
  loss.loss = options.loss;
  pm.addPass(nn::createNNAttachLossPass(loss));

  nn::NNMicrobatchPassOptions microbatch;
  microbatch.microbatches = options.microbatches;
  pm.addPass(nn::createNNMicrobatchPass(microbatch));

  GPipePartitionPassOptions partition;
  partition.stages = options.stages;
  partition.microbatches = options.microbatches;
  partition.schedule = options.schedule;
  partition.remat = options.remat;
  partition.balance.assign(options.balance.begin(), options.balance.end());
  partition.memoryBudget = options.memoryBudget;
  partition.profile = options.profile;
  pm.addPass(createGPipePartitionPass(partition));
  if (partitionOnly)
    return;

  pm.addPass(createGPipeSchedulePass());
  pm.addPass(createGPipeVerifySchedulePass());

  GPipePlanMemoryPassOptions memory;
  memory.optimizer = options.optimizer;
  memory.memoryBudget = options.memoryBudget;
  pm.addPass(createGPipePlanMemoryPass(memory));
}

void mlir::gpipe::registerGPipePipelines() {
  PassPipelineRegistration<GPipePipelineOptions>(
      "gpipe-pipeline",
      "Compile an nn network into a verified, scheduled GPipe pipeline",
      [](OpPassManager &pm, const GPipePipelineOptions &options) {
        buildGPipePipeline(pm, options);
      });
}
