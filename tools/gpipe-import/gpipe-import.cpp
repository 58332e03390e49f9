//===- gpipe-import.cpp - Frontend driver: ONNX or preset to nn IR --------===//
//
// Reads a model (an ONNX file, or a built-in preset) and writes it as `nn`
// dialect IR. By default the result is canonicalized (primitive forms raised
// to nn.linear / nn.gelu) and cut into nn.layer ops, the form the pipeline
// compiler takes; `--raw` stops right after import.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"
#include "gpipe/InitAllDialects.h"

#include "../common/ModelOptions.h"
#include "../common/OutOfMemory.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

#include <csignal>

using namespace mlir;
namespace cl = llvm::cl;

static cl::OptionCategory category("gpipe-import options");

static cl::opt<std::string> outputFile("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(category));
static cl::opt<bool>
    raw("raw", cl::desc("Print the import as is: no fusion, no layers"),
        cl::cat(category));
static cl::opt<mlir::gpipe::nn::LayerGranularity>
    granularity("granularity", cl::desc("Layer granularity"),
                cl::init(mlir::gpipe::nn::LayerGranularity::Scope),
                mlir::gpipe::nn::getLayerGranularityValues(),
                cl::cat(category));
static cl::opt<bool> summary("summary",
                             cl::desc("Print a table of the layers to stderr"),
                             cl::cat(category));
static cl::opt<bool> emitBytecode("emit-bytecode",
                                  cl::desc("Write MLIR bytecode (compact "
                                           "parameter values)"),
                                  cl::cat(category));
static cl::opt<bool> inference(
    "inference",
    cl::desc("Import for an inference pipeline: accept batch norms exported "
             "in inference mode (gpipe-compile --inference)"),
    cl::cat(category));
int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  gpipe_tools::installOutOfMemoryHandler("gpipe-import");
  // Past a file-size limit a write fails with EFBIG and takes its error
  // path instead of the signal killing the importer.
  std::signal(SIGXFSZ, SIG_IGN);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  gpipe_tools::addDebugOption();
  registerPassManagerCLOptions();
  cl::HideUnrelatedOptions({&category, &gpipe_tools::getModelCategory(),
                            &gpipe_tools::getPresetCategory()});
  cl::ParseCommandLineOptions(argc, argv,
                              "gpipe-import: ONNX model or preset -> nn IR\n");

  DialectRegistry registry;
  mlir::gpipe::registerAllDialects(registry);
  MLIRContext context(registry);
  gpipe_tools::configureDiagnostics(context);
  context.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  auto toolHandler = gpipe_tools::reportUnlocatedAs(context, "gpipe-import");

  gpipe_tools::outOfMemoryDoing = "loading the model";
  OwningOpRef<ModuleOp> module =
      gpipe_tools::loadModel(context, sourceMgr, inference);
  if (!module)
    return 1;

  if (!raw) {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)))
      return 1;
    pm.addPass(mlir::gpipe::nn::createNNFoldConstantsPass());
    pm.addPass(createCanonicalizerPass());
    if (failed(pm.run(*module)))
      return 1;
    for (auto func : module->getOps<func::FuncOp>()) {
      if (failed(mlir::gpipe::nn::packInputs(*module, func)) ||
          failed(mlir::gpipe::nn::formLayers(func, granularity)))
        return 1;
      if (summary)
        mlir::gpipe::nn::printLayerSummary(func, llvm::errs());
    }
  }

  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << "gpipe-import: error: " << error << "\n";
    return 1;
  }
  if (emitBytecode) {
    if (failed(writeBytecodeToFile(*module, output->os())))
      return 1;
  } else {
    module->print(output->os());
  }
  // A failed write (a full disk, a file-size limit) is an error here, not
  // in the stream's destructor, which would abort; the partial file goes.
  output->os().flush();
  if (std::error_code ec = output->os().error()) {
    output->os().clear_error();
    llvm::errs() << "gpipe-import: error: cannot write " << outputFile << ": "
                 << ec.message() << "\n";
    return 1;
  }
  output->keep();
  return 0;
}
