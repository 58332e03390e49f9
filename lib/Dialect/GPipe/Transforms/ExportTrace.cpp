//===- ExportTrace.cpp - Export a simulated pipeline timeline ---*- C++ -*-===//
//
// Implements `gpipe-export-trace`: simulates a scheduled `gpipe.pipeline`
// with the timeline simulator (per-stage durations from the stage
// declarations, defaulting to 1 for a forward and 2 for a backward) and
// writes the result as a Chrome/Perfetto trace and/or an SVG picture.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Analysis/Timeline.h"
#include "gpipe/Dialect/GPipe/IR/GPipeOps.h"
#include "gpipe/Dialect/GPipe/Transforms/Passes.h"
#include "gpipe/Dialect/GPipe/Transforms/Transforms.h"
#include "gpipe/Dialect/GPipe/Utils/ScheduleConversion.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::gpipe {
#define GEN_PASS_DEF_GPIPEEXPORTTRACEPASS
#include "gpipe/Dialect/GPipe/Transforms/Passes.h.inc"
} // namespace mlir::gpipe

using namespace mlir;
using namespace mlir::gpipe;

static LogicalResult writeFile(Operation *anchor, StringRef path,
                               StringRef contents) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output = openOutputFile(path, &error);
  if (!output)
    return emitError(anchor->getLoc(), "cannot write '")
           << path << "': " << error;
  output->os() << contents;
  output->keep();
  return success();
}

namespace {

struct GPipeExportTracePass
    : public mlir::gpipe::impl::GPipeExportTracePassBase<GPipeExportTracePass> {
  using GPipeExportTracePassBase::GPipeExportTracePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (file.empty() && svg.empty()) {
      emitError(module.getLoc(),
                "gpipe-export-trace needs file=<trace.json> and/or "
                "svg=<picture.svg>");
      return signalPassFailure();
    }
    FailureOr<PipelineOp> target = findPipeline(module, pipeline);
    if (failed(target))
      return signalPassFailure();
    PipelineOp op = *target;
    // The simulator needs a valid schedule: report findings at their ops.
    FailureOr<const PipelineSchedule *> verified =
        verifyPipelineSchedule(op, getAnalysis<ScheduleAnalysis>());
    if (failed(verified))
      return signalPassFailure();
    const PipelineSchedule *converted = *verified;
    Timeline timeline =
        simulate(converted->schedule, getStageDurations(converted->stages),
                 getSendBuffering(op));
    if (!timeline.ok()) {
      emitPipelineError(op)
          << "cannot simulate its schedule: " << timeline.error;
      return signalPassFailure();
    }
    if (!file.empty() &&
        failed(
            writeFile(op, file, toChromeTrace(converted->schedule, timeline))))
      return signalPassFailure();
    if (!svg.empty() &&
        failed(writeFile(op, svg, toSVG(converted->schedule, timeline))))
      return signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
