//===- TiedParameters.h - Which stages hold a tied weight's copies -*- C++
//-*-===//
//
// A parameter read by several layers has one copy per layer
// (nn-copy-tied-parameters): the parameter itself, then its `tied_to`
// copies. The schedule (SUM_TIED), the memory plan (its receive buffer) and
// the lowering (the metadata's groups) all ask the same question: which
// stage reads each copy.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_GPIPE_UTILS_TIEDPARAMETERS_H
#define GPIPE_DIALECT_GPIPE_UTILS_TIEDPARAMETERS_H

#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <vector>

namespace mlir::gpipe {

/// One copy of a tied parameter: its symbol, its bytes and the stage (index
/// into the pipeline's stages) whose forward reads it.
struct TiedCopy {
  StringRef name;
  int stage = -1;
  int64_t bytes = 0;
};

/// For each parameter with `tied_to` copies, the parameter and then its
/// copies in module order (copy order), each with its stage. Copies no stage
/// reads are left out.
SmallVector<SmallVector<TiedCopy>> getTiedGroups(ArrayRef<StageOp> stages);

/// Which stages read a copy of a tied parameter.
std::vector<bool> getStagesHoldingTiedCopies(ArrayRef<StageOp> stages);

/// The receive buffer each stage's SUM_TIED needs (StageMemory::tiedBytes):
/// on the rank of a group's first copy, the largest copy of a group that
/// has a copy on another rank; `stageToRank` from the schedule.
std::vector<int64_t> getTiedReceiveBytes(ArrayRef<StageOp> stages,
                                         ArrayRef<int> stageToRank);

} // namespace mlir::gpipe

#endif // GPIPE_DIALECT_GPIPE_UTILS_TIEDPARAMETERS_H
