//===- gpipe-opt.cpp - gpipe's optimizer driver ---------------------------===//
//
// `mlir-opt` for gpipe: parses IR of every gpipe dialect, runs any registered
// pass or pipeline, and prints the result. This is what lit tests drive.
//
//===----------------------------------------------------------------------===//

#include "gpipe/InitAllDialects.h"
#include "gpipe/InitAllPasses.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::gpipe::registerAllPasses();
  mlir::DialectRegistry registry;
  mlir::gpipe::registerAllDialects(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "gpipe optimizer driver\n", registry));
}
