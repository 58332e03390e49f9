//===- gpipe-opt.cpp - gpipe's optimizer driver ---------------------------===//
//
// `mlir-opt` for gpipe: parses IR of every gpipe dialect, runs any registered
// pass or pipeline, and prints the result. This is what lit tests drive.
// Textual input that MLIR's parser would crash on (nested deeper than
// NestingLimit.h's limit, a zero-aligned resource blob: ResourceBlobs.h) is
// refused with a located error before the parser sees it.
//
//===----------------------------------------------------------------------===//

#include "gpipe/InitAllDialects.h"
#include "gpipe/InitAllPasses.h"
#include "gpipe/Support/ResourceBlobs.h"

#include "../common/OutOfMemory.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <csignal>

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  gpipe_tools::installOutOfMemoryHandler("gpipe-opt");
  // Past a file-size limit a write fails with EFBIG and takes its error
  // path instead of the signal killing the tool.
  std::signal(SIGXFSZ, SIG_IGN);
  mlir::gpipe::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::gpipe::registerAllDialects(registry);
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "gpipe optimizer driver\n", registry);
  mlir::MlirOptMainConfig config =
      mlir::MlirOptMainConfig::createFromCLOptions();
  // Listing dialects or passes reads no input.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << "gpipe-opt: error: " << error << "\n";
    return 1;
  }
  // What MLIR's parser would crash on, refused where it is.
  if (auto problem = mlir::gpipe::findUnparsableIR(input->getBuffer())) {
    llvm::SourceMgr sourceMgr;
    const char *start = input->getBufferStart();
    sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
    sourceMgr.PrintMessage(llvm::SMLoc::getFromPointer(start + problem->first),
                           llvm::SourceMgr::DK_Error, problem->second);
    return 1;
  }
  gpipe_tools::outOfMemoryDoing = "running the passes";
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << "gpipe-opt: error: " << error << "\n";
    return 1;
  }
  if (mlir::failed(
          mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  // A failed write (a full disk, a file-size limit) is an error here, not
  // in the stream's destructor, which would abort; the partial file goes.
  output->os().flush();
  if (std::error_code ec = output->os().error()) {
    output->os().clear_error();
    llvm::errs() << "gpipe-opt: error: cannot write " << outputFilename << ": "
                 << ec.message() << "\n";
    return 1;
  }
  output->keep();
  return 0;
}
