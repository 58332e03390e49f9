//===- FuzzONNX.cpp - libFuzzer target for the ONNX importer ---*- C++ -*-===//
//
// Feeds arbitrary bytes to importONNXBuffer as an ONNX model and verifies
// whatever module comes back. Any input may be rejected, with diagnostics;
// none may crash the importer or yield a module that fails verification.
//
//===----------------------------------------------------------------------===//

#include "FuzzContext.h"

#include "gpipe/Frontend/ONNXImporter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gpipe::fuzz::FuzzContext fuzzContext;
  mlir::MLIRContext *context = fuzzContext.get();
  llvm::StringRef buffer(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::gpipe::importONNXBuffer(context, buffer, "fuzz.onnx");
  if (!module)
    return 0;
  if (mlir::failed(mlir::verify(*module))) {
    std::fprintf(stderr, "the importer returned a module that does not "
                         "verify\n");
    std::abort();
  }
  return 0;
}
