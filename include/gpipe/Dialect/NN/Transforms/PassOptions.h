//===- PassOptions.h - Enum-typed options of the nn passes ------*- C++ -*-===//
//
// The values of the nn passes' enum-typed options (`loss`, `granularity`),
// declared once: the passes' options (Passes.td), the gpipe-pipeline options
// and the tools' flags all take these lists, and the option parser rejects
// any other value naming the valid ones (gpipe/Support/EnumOption.h).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_TRANSFORMS_PASSOPTIONS_H
#define GPIPE_DIALECT_NN_TRANSFORMS_PASSOPTIONS_H

#include "gpipe/Dialect/NN/Transforms/Transforms.h"
#include "gpipe/Support/EnumOption.h"

GPIPE_ENUM_OPTION_PARSER(::gpipe::abi::LossKind)
GPIPE_ENUM_OPTION_PARSER(::mlir::gpipe::nn::LayerGranularity)

namespace mlir::gpipe::nn {

/// cross-entropy, mse (gpipe/Runtime/Losses.def).
inline llvm::cl::ValuesClass getLossKindValues() {
  return llvm::cl::ValuesClass({
#define GPIPE_LOSS(kind, name, help) clEnumValN(LossKind::kind, name, help),
#include "gpipe/Runtime/Losses.def"
  });
}

/// scope, anchor, op.
inline llvm::cl::ValuesClass getLayerGranularityValues() {
  return llvm::cl::values(
      clEnumValN(LayerGranularity::Scope, "scope",
                 "anchor, then merge consecutive layers of one name scope"),
      clEnumValN(LayerGranularity::Anchor, "anchor",
                 "merge segments without an anchor op into the previous one"),
      clEnumValN(LayerGranularity::Op, "op", "every cut point"));
}

} // namespace mlir::gpipe::nn

#endif // GPIPE_DIALECT_NN_TRANSFORMS_PASSOPTIONS_H
