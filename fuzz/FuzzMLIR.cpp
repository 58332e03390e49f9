//===- FuzzMLIR.cpp - libFuzzer target for .mlir parse + verify -*- C++ -*-===//
//
// Parses arbitrary text as a .mlir module with every gpipe dialect
// registered and verifies it, as `gpipe-opt` does before running a pass:
// the custom parsers, printers' inverse and verifiers of the nn and gpipe
// ops, types and attributes must reject bad input with a diagnostic.
//
//===----------------------------------------------------------------------===//

#include "FuzzContext.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  gpipe::fuzz::FuzzContext fuzzContext;
  mlir::ParserConfig config(fuzzContext.get(), /*verifyAfterParse=*/true);
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, config, "fuzz.mlir");
  (void)module;
  return 0;
}
