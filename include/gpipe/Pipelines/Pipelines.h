//===- Pipelines.h - gpipe's pass pipelines ---------------------*- C++ -*-===//
//
// The one definition of the pipeline-compiler pass pipeline: registered for
// gpipe-opt as `gpipe-pipeline{...}` and called by the compile driver.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_PIPELINES_PIPELINES_H
#define GPIPE_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::gpipe {

struct GPipePipelineOptions : public PassPipelineOptions<GPipePipelineOptions> {
  Option<int64_t> stages{*this, "stages",
                         llvm::cl::desc("Number of pipeline stages K"),
                         llvm::cl::init(1)};
  Option<int64_t> microbatches{
      *this, "microbatches",
      llvm::cl::desc("Micro-batches M per mini-batch (must divide the batch)"),
      llvm::cl::init(1)};
  Option<std::string> schedule{*this, "schedule",
                               llvm::cl::desc("gpipe or 1f1b"),
                               llvm::cl::init("gpipe")};
  Option<std::string> remat{*this, "remat", llvm::cl::desc("stage or none"),
                            llvm::cl::init("stage")};
  ListOption<int64_t> balance{*this, "balance",
                              llvm::cl::desc("Manual layers per stage")};
  Option<std::string> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("Per-stage memory cap, e.g. 16GiB"), llvm::cl::init("")};
  Option<std::string> loss{*this, "loss",
                           llvm::cl::desc("cross-entropy or mse"),
                           llvm::cl::init("cross-entropy")};
  Option<std::string> profile{*this, "profile",
                              llvm::cl::desc("Cost-model device: cpu, h200 or h200-bf16"),
                              llvm::cl::init("cpu")};
  Option<std::string> optimizer{
      *this, "optimizer",
      llvm::cl::desc("Optimizer state the memory plan reserves: sgd, momentum "
                     "or adam"),
      llvm::cl::init("sgd")};
  Option<std::string> granularity{
      *this, "granularity",
      llvm::cl::desc("Layer granularity: scope, anchor or op"),
      llvm::cl::init("scope")};
};

/// nn network (one mini-batch) -> verified, scheduled, memory-planned
/// gpipe.pipeline: canonicalize, nn-form-layers, nn-attach-loss,
/// nn-microbatch, gpipe-partition, gpipe-schedule, gpipe-verify-schedule,
/// gpipe-plan-memory.
/// With `partitionOnly`, stops after gpipe-partition (an unscheduled
/// pipeline of stage functions).
void buildGPipePipeline(OpPassManager &pm, const GPipePipelineOptions &options,
                        bool partitionOnly = false);

/// Registers `gpipe-pipeline` with the pass registry.
void registerGPipePipelines();

} // namespace mlir::gpipe

#endif // GPIPE_PIPELINES_PIPELINES_H
