//===- LayerSummary.cpp - A table of a network's layers -------------------===//
//
// Prints one row per nn.layer of a network function: its name, op count,
// FLOPs, parameters and output shape, from the ops' cost interface. This is
// what users look at to see where the partitioner may cut.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::gpipe::nn;

void mlir::gpipe::nn::printLayerSummary(func::FuncOp func,
                                        llvm::raw_ostream &os) {
  os << llvm::format("%-5s %-24s %6s %12s %12s  %s\n", "layer", "name", "ops",
                     "MFLOP", "params", "output");
  int64_t totalFlops = 0, totalParams = 0, index = 0;
  for (LayerOp layer : func.getBody().getOps<LayerOp>()) {
    int64_t ops = 0, params = 0;
    llvm::StringSet<> seen;
    layer.getBodyBlock().walk([&](Operation *op) {
      if (isa<YieldOp>(op))
        return;
      ++ops;
      if (auto param = dyn_cast<ParamOp>(op))
        if (seen.insert(param.getName()).second)
          params += cast<ShapedType>(param.getType()).getNumElements();
    });
    int64_t flops = layer.getCost().flops;
    totalFlops += flops;
    totalParams += params;
    std::string out;
    llvm::raw_string_ostream outs(out);
    llvm::interleaveComma(layer.getResultTypes(), outs);
    os << llvm::format("%-5lld %-24s %6lld %12.3f %12lld  %s\n",
                       static_cast<long long>(index++),
                       layer.getName().str().c_str(),
                       static_cast<long long>(ops), flops / 1e6,
                       static_cast<long long>(params), out.c_str());
  }
  os << llvm::format("%-5s %-24s %6s %12.3f %12lld\n", "total", "", "",
                     totalFlops / 1e6, static_cast<long long>(totalParams));
}
