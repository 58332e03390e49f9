//===- ExpandPrograms.cpp - Unroll micro-batch loops ------------*- C++ -*-===//
//
// Implements `gpipe-expand-programs`: every `gpipe.for` of a rank's program
// is replaced by its iterations, through the same walk (`walkProgram`) the
// analyses read programs with, so the flat program is exactly what runs.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::gpipe {
#define GEN_PASS_DEF_GPIPEEXPANDPROGRAMSPASS
#include "gpipe/Dialect/GPipe/Transforms/Passes.h.inc"
} // namespace mlir::gpipe

using namespace mlir;
using namespace mlir::gpipe;

namespace {

struct GPipeExpandProgramsPass
    : public mlir::gpipe::impl::GPipeExpandProgramsPassBase<
          GPipeExpandProgramsPass> {
  void runOnOperation() override {
    getOperation().walk([](ProgramOp program) {
      if (program.getBody().empty())
        return;
      SmallVector<std::pair<Operation *, int64_t>> actions;
      walkProgram(program, [&](ActionOpInterface action, int64_t mb) {
        actions.push_back({action, mb});
      });
      Block &body = program.getBody().front();
      OpBuilder builder = OpBuilder::atBlockBegin(&body);
      for (auto [op, mb] : actions) {
        Operation *flat = builder.clone(*op);
        // Every action's only operand is its micro-batch base.
        if (flat->getNumOperands() == 1) {
          flat->eraseOperand(0);
          flat->setAttr("microbatch", builder.getI64IntegerAttr(mb));
        }
      }
      // Everything after the clones is the old program.
      for (Operation &old : llvm::make_early_inc_range(
               llvm::make_range(builder.getInsertionPoint(), body.end())))
        old.erase();
      program.removeArenaAttr();
    });
  }
};

} // namespace
