//===- CopyTiedParameters.cpp - One copy of a shared weight per layer -----===//
//
// Implements `nn-copy-tied-parameters`: a parameter read by several layers
// of a network function gets one copy per reading layer after the first
// (`tied_to` the first), so that each layer's gradient contribution has a
// slot of its own and the runtime can sum them in one fixed order whatever
// the partition.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::gpipe::nn {
#define GEN_PASS_DEF_NNCOPYTIEDPARAMETERSPASS
#include "gpipe/Dialect/NN/Transforms/Passes.h.inc"
} // namespace mlir::gpipe::nn

using namespace mlir;
using namespace mlir::gpipe::nn;

namespace {

struct NNCopyTiedParametersPass
    : public mlir::gpipe::nn::impl::NNCopyTiedParametersPassBase<
          NNCopyTiedParametersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (func::FuncOp func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      Block &body = func.getBody().front();
      if (llvm::none_of(body, [](Operation &op) { return isa<LayerOp>(op); }))
        continue;
      // The readers of each parameter in body order: each top-level layer,
      // then everything else (the loss) as one more.
      llvm::MapVector<StringRef, SmallVector<SmallVector<ParamOp>>> readers;
      SmallVector<ParamOp> rest;
      auto collect = [&](Operation *root, SmallVectorImpl<ParamOp> &into) {
        root->walk([&](ParamOp read) { into.push_back(read); });
      };
      auto group = [&](ArrayRef<ParamOp> reads) {
        llvm::MapVector<StringRef, SmallVector<ParamOp>> byName;
        for (ParamOp read : reads)
          byName[read.getName()].push_back(read);
        for (auto &[name, list] : byName)
          readers[name].push_back(list);
      };
      for (Operation &op : body) {
        if (auto layer = dyn_cast<LayerOp>(op)) {
          SmallVector<ParamOp> reads;
          collect(layer, reads);
          group(reads);
        } else {
          collect(&op, rest);
        }
      }
      group(rest);

      for (auto &[name, groups] : readers) {
        if (groups.size() < 2)
          continue;
        auto first = symbols.lookup<ParameterOp>(name);
        if (!first) // The verifier reports the dangling read.
          continue;
        OpBuilder builder(first);
        builder.setInsertionPointAfter(first);
        for (size_t k = 1; k < groups.size(); ++k) {
          auto copy = ParameterOp::create(
              builder, first.getLoc(), (name + "#" + Twine(k)).str(),
              first.getType(), /*initial_value=*/ElementsAttr(), InitKindAttr(),
              FloatAttr(), FlatSymbolRefAttr::get(first));
          // Unique in the module: "#k" again with a suffix if taken.
          symbols.insert(copy);
          builder.setInsertionPointAfter(copy);
          for (ParamOp read : groups[k])
            read.setNameAttr(FlatSymbolRefAttr::get(copy));
        }
      }
    }
  }
};

} // namespace
