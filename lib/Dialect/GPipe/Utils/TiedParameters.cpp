//===- TiedParameters.cpp - Which stages hold a tied weight's copies ------===//

#include "gpipe/Dialect/GPipe/Utils/TiedParameters.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace mlir::gpipe;

SmallVector<SmallVector<TiedCopy>>
mlir::gpipe::getTiedGroups(ArrayRef<StageOp> stages) {
  SmallVector<SmallVector<TiedCopy>> groups;
  if (stages.empty())
    return groups;
  auto module = stages.front()->getParentOfType<ModuleOp>();
  llvm::StringMap<int> readBy;
  for (auto [s, stage] : llvm::enumerate(stages)) {
    StageOp decl = stage;
    auto forward = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        decl, decl.getForwardAttr());
    if (!forward)
      continue;
    forward.walk(
        [&](nn::ParamOp read) { readBy.try_emplace(read.getName(), int(s)); });
  }
  llvm::MapVector<StringRef, SmallVector<TiedCopy>> byFirst;
  auto copyOf = [&](nn::ParameterOp p) {
    return TiedCopy{
        p.getSymName(), readBy.lookup(p.getSymName()),
        int64_t(p.getTensorType().getNumElements()) *
            int64_t(p.getTensorType().getElementTypeBitWidth() / 8)};
  };
  for (nn::ParameterOp p : module.getOps<nn::ParameterOp>()) {
    FlatSymbolRefAttr first = p.getTiedToAttr();
    if (!first || !readBy.count(p.getSymName()))
      continue;
    SmallVector<TiedCopy> &group = byFirst[first.getValue()];
    if (group.empty()) {
      auto root = module.lookupSymbol<nn::ParameterOp>(first);
      if (!root || !readBy.count(root.getSymName()))
        continue;
      group.push_back(copyOf(root));
    }
    group.push_back(copyOf(p));
  }
  // The groups in the order of their first parameters in the module.
  for (nn::ParameterOp p : module.getOps<nn::ParameterOp>()) {
    auto it = byFirst.find(p.getSymName());
    if (it != byFirst.end() && it->second.size() > 1)
      groups.push_back(it->second);
  }
  return groups;
}

/// Which of `numStages` stages read a copy in `groups`.
static std::vector<bool> holdingStages(size_t numStages,
                                       ArrayRef<SmallVector<TiedCopy>> groups) {
  std::vector<bool> holds(numStages, false);
  for (const SmallVector<TiedCopy> &group : groups)
    for (const TiedCopy &copy : group)
      holds[size_t(copy.stage)] = true;
  return holds;
}

std::vector<bool>
mlir::gpipe::getStagesHoldingTiedCopies(ArrayRef<StageOp> stages) {
  return holdingStages(stages.size(), getTiedGroups(stages));
}

std::vector<int64_t>
mlir::gpipe::getTiedReceiveBytes(ArrayRef<StageOp> stages,
                                 ArrayRef<int> stageToRank) {
  std::vector<int64_t> bytes(stages.size(), 0);
  auto rankOf = [&](int stage) {
    return stage >= 0 && size_t(stage) < stageToRank.size() ? stageToRank[stage]
                                                            : -1;
  };
  // The SUM_TIED of a rank is named by its lowest stage holding a copy.
  SmallVector<SmallVector<TiedCopy>> groups = getTiedGroups(stages);
  std::vector<bool> holds = holdingStages(stages.size(), groups);
  auto namedStage = [&](int rank) {
    for (size_t s = 0; s < stages.size(); ++s)
      if (holds[s] && rankOf(int(s)) == rank)
        return int(s);
    return -1;
  };
  for (const SmallVector<TiedCopy> &group : groups) {
    int gatherer = rankOf(group.front().stage);
    bool remote = llvm::any_of(group, [&](const TiedCopy &copy) {
      return rankOf(copy.stage) != gatherer;
    });
    int named = namedStage(gatherer);
    if (remote && named >= 0)
      bytes[size_t(named)] =
          std::max(bytes[size_t(named)], group.front().bytes);
  }
  return bytes;
}
