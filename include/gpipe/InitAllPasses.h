//===- InitAllPasses.h - Register every gpipe pass --------------*- C++ -*-===//
//
// Registers gpipe's passes, plus the upstream ones lit tests and users chain
// with them (canonicalize, cse, ...).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_INITALLPASSES_H
#define GPIPE_INITALLPASSES_H

#include "gpipe/Conversion/Passes.h"
#include "gpipe/Dialect/GPipe/Transforms/Passes.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"
#include "gpipe/Pipelines/Pipelines.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::gpipe {

inline void registerAllPasses() {
  mlir::registerTransformsPasses();
  nn::registerNNPasses();
  registerGPipePasses();
  registerGPipeConversionPasses();
  registerGPipePipelines();
}

} // namespace mlir::gpipe

#endif // GPIPE_INITALLPASSES_H
