//===- FuzzMLIR.cpp - libFuzzer target for .mlir parse + verify -*- C++ -*-===//
//
// Parses arbitrary text as a .mlir module with every gpipe dialect
// registered and verifies it, as `gpipe-opt` does before running a pass:
// the custom parsers, printers' inverse and verifiers of the nn and gpipe
// ops, types and attributes must reject bad input with a diagnostic.
//
//===----------------------------------------------------------------------===//

#include "FuzzContext.h"

#include "gpipe/Support/ResourceBlobs.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The tools refuse what MLIR's parser mishandles before parsing.
  if (mlir::gpipe::findZeroAlignedBlob(
          llvm::StringRef(reinterpret_cast<const char *>(data), size)))
    return 0;
  gpipe::fuzz::FuzzContext fuzzContext;
  mlir::ParserConfig config(fuzzContext.get(), /*verifyAfterParse=*/true);
  // The lexer relies on the NUL after the buffer that every file read
  // through MemoryBuffer has (as gpipe-opt reads its input): a copy adds it.
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz.mlir"),
      llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, config);
  (void)module;
  return 0;
}
