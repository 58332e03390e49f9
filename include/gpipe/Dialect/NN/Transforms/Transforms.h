//===- Transforms.h - nn rewrite entry points -------------------*- C++ -*-===//
//
// Public pattern sets and transformations of the `nn` dialect that passes
// (and the compile driver) reuse.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_TRANSFORMS_TRANSFORMS_H
#define GPIPE_DIALECT_NN_TRANSFORMS_TRANSFORMS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace mlir::gpipe::nn {

/// Patterns raising primitive forms to fused ops: gemm/matmul(+bias add) to
/// nn.linear, the erf-decomposed GELU to nn.gelu. Also registered as
/// canonicalization patterns of the ops they root at.
void populateRaiseFusedOpsPatterns(RewritePatternSet &patterns);

/// How finely `formLayers` cuts.
enum class LayerGranularity {
  /// `Anchor`, then consecutive layers of one name scope merge (a
  /// transformer block with two residual halves is one layer).
  Scope,
  /// Segments without an anchor op merge into the preceding layer.
  Anchor,
  /// Every cut point starts a layer.
  Op,
};

/// Parses "scope", "anchor" or "op".
std::optional<LayerGranularity> parseLayerGranularity(llvm::StringRef name);

/// Groups the body of `func` into nn.layer ops at single-activation cut
/// points. Returns the number of layers formed; a function that already has
/// layers is left alone and reports 0.
FailureOr<unsigned> formLayers(func::FuncOp func, LayerGranularity granularity);

/// Prints a table of the nn.layer ops of `func`: name, op count, forward
/// FLOPs, parameter count and output type.
void printLayerSummary(func::FuncOp func, llvm::raw_ostream &os);

} // namespace mlir::gpipe::nn

#endif // GPIPE_DIALECT_NN_TRANSFORMS_TRANSFORMS_H
