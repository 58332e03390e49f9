//===- FuzzContext.h - The MLIR context of the fuzz targets ----*- C++ -*-===//
//
// The MLIR fuzz targets each run one input in a context with every gpipe
// dialect registered (loaded on first use, as in the tools), multithreading
// off, and a diagnostic handler that drops the diagnostics: rejecting an
// input with errors is the expected outcome, and printing each would cost
// more than the parse.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_FUZZ_FUZZCONTEXT_H
#define GPIPE_FUZZ_FUZZCONTEXT_H

#include "gpipe/InitAllDialects.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

// LLVM's BumpPtrAllocator poisons its free slab space for ASan in code
// built with ASan (its header inlines into ours) but not in the
// uninstrumented MLIR library, which then hands out still-poisoned memory
// from the same slabs: user poisoning is turned off so that this mix of
// instrumented and uninstrumented copies reports no false use-after-poison.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

namespace gpipe::fuzz {

class FuzzContext {
public:
  FuzzContext()
      : context(registry(), mlir::MLIRContext::Threading::DISABLED),
        handler(context.getDiagEngine().registerHandler(
            [](mlir::Diagnostic &) { return mlir::success(); })) {}
  ~FuzzContext() { context.getDiagEngine().eraseHandler(handler); }

  mlir::MLIRContext *get() { return &context; }

private:
  static const mlir::DialectRegistry &registry() {
    static const mlir::DialectRegistry *all = [] {
      auto *r = new mlir::DialectRegistry;
      mlir::gpipe::registerAllDialects(*r);
      return r;
    }();
    return *all;
  }

  mlir::MLIRContext context;
  mlir::DiagnosticEngine::HandlerID handler;
};

} // namespace gpipe::fuzz

#endif // GPIPE_FUZZ_FUZZCONTEXT_H
