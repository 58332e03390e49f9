//===- ONNXImporter.h - ONNX to nn dialect ----------------------*- C++ -*-===//
//
// Imports an ONNX model (opsets 13-17, as torch.onnx.export writes them) into
// a module holding `nn.parameter`s for the initializers and one `func.func`
// of `nn` ops for the graph. Shape arithmetic is folded to constants; every
// op gets the location `"<node name>"("<file>":<N>:0)` where N counts the
// graph's nodes from 1 (graph inputs, initializers and outputs use 0).
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_FRONTEND_ONNXIMPORTER_H
#define GPIPE_FRONTEND_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace mlir::gpipe {

struct ONNXImportOptions {
  /// Sizes for symbolic input dims (`dim_param`), e.g. {"batch": 8}.
  llvm::StringMap<int64_t> dimSizes;
  /// Name of the generated network function.
  std::string funcName = "forward";
  /// Initializers with more elements than this are stored as
  /// `dense_resource` blobs instead of inline `dense` literals.
  int64_t inlineElementLimit = 16;
  /// Import for inference (gpipe-compile --inference): a BatchNormalization
  /// exported in inference mode (fixed running statistics) is accepted, as
  /// the `nn.batch_norm` that nn-inference turns into its running-statistics
  /// form; for training it is refused.
  bool inference = false;
  /// Float initializers to keep constant (glob patterns on their names): an
  /// exporter may fold a buffer (a rotary table) into an initializer that
  /// looks like any weight, and would then be trained.
  std::vector<std::string> frozen;
};

/// Reads and imports the ONNX file at `path`. On failure reports located
/// diagnostics through the context's diagnostic engine and returns null.
OwningOpRef<ModuleOp> importONNXFile(MLIRContext *context, llvm::StringRef path,
                                     const ONNXImportOptions &options = {});

/// Imports an ONNX model already in memory; `bufferName` names it in
/// locations and messages.
OwningOpRef<ModuleOp> importONNXBuffer(MLIRContext *context,
                                       llvm::StringRef buffer,
                                       llvm::StringRef bufferName,
                                       const ONNXImportOptions &options = {});

} // namespace mlir::gpipe

#endif // GPIPE_FRONTEND_ONNXIMPORTER_H
