//===- KernelCallOpInterface.td - Which kernel computes an op -*- tablegen -*-===//
//
// The interface through which the lowering and the interpreter ask an nn op
// for its runtime kernel call. The ops do not declare it: external models
// attach it per op family (lib/Dialect/NN/KernelCalls), so the nn dialect
// stays free of the runtime's kernel table.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_DIALECT_NN_KERNELCALLS_KERNELCALLOPINTERFACE_TD
#define GPIPE_DIALECT_NN_KERNELCALLS_KERNELCALLOPINTERFACE_TD

include "mlir/IR/OpBase.td"

def KernelCallOpInterface : OpInterface<"KernelCallOpInterface"> {
  let description = [{
    An op one runtime kernel computes (Kernels.def): its call is the
    kernel and its arguments in the order the kernel declares them, with
    the element-type and shape checks the kernel takes for granted. The
    models are attached by `registerKernelCallExternalModels`, one template
    per op family (elementwise, contractions, reductions and
    normalizations, data movement, losses, convolutions and pooling).
  }];
  let cppNamespace = "::mlir::gpipe";
  let methods = [
    InterfaceMethod<
      "The op's kernel call; a located error where its types or shapes "
      "are beyond what the kernel (or `options.consumer`) supports.",
      "::mlir::FailureOr<::mlir::gpipe::KernelCall>", "getKernelCall",
      (ins "const ::mlir::gpipe::KernelCallOptions &":$options)>,
  ];
}

#endif // GPIPE_DIALECT_NN_KERNELCALLS_KERNELCALLOPINTERFACE_TD
