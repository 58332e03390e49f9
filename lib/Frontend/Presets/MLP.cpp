//===- MLP.cpp - The built-in multilayer perceptron -------------*- C++ -*-===//
//
// Builds the `mlp` preset: the PyTorch `nn.Sequential` of `depth` pairs
// Linear + ReLU followed by a Linear to `classes`, so the Linears sit at the
// even indices (`0.weight`, `2.weight`, ...) and the ReLUs at the odd ones.
// Weights and biases use PyTorch's default init for Linear, uniform on
// +-1/sqrt(in_features).
//
//===----------------------------------------------------------------------===//

#include "PresetBuilder.h"

#include "gpipe/Dialect/NN/IR/NNOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::gpipe;
using namespace mlir::gpipe::presets;

/// One PyTorch-initialized Linear at index `index` of the Sequential.
static Value buildLinear(PresetBuilder &pb, int64_t index, Value x,
                         int64_t out) {
  double bound = 1.0 / std::sqrt(static_cast<double>(shapeOf(x).back()));
  return pb.linear(std::to_string(index), x, out, InitRule::uniform(bound),
                   InitRule::uniform(bound));
}

OwningOpRef<ModuleOp> presets::buildMLP(MLIRContext *context,
                                        const PresetOptions &options) {
  PresetBuilder pb(context, "mlp",
                   f32Tensor(context, {options.batch, options.inFeatures}),
                   f32Tensor(context, {options.batch, options.classes}));
  Value x = pb.input();
  int64_t index = 0;
  for (int64_t i = 0; i < options.depth; ++i) {
    x = buildLinear(pb, index++, x, options.width);
    x = nn::ReluOp::create(pb.builder(),
                           pb.loc(std::to_string(index++), "Relu"), x);
  }
  return pb.finish(buildLinear(pb, index, x, options.classes));
}
