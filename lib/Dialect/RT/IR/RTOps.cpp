//===- RTOps.cpp - gpipe_rt dialect ops -------------------------*- C++ -*-===//
//
// The `gpipe_rt` dialect: registration, the kernel-call verifier (against
// the signatures Kernels.def declares) and the status check's verifier.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/RT/IR/RTOps.h"

#include "gpipe/Runtime/KernelSignatures.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::gpipe_rt;

#include "gpipe/Dialect/RT/IR/RTOpsDialect.cpp.inc"

void RTDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "gpipe/Dialect/RT/IR/RTOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// OffsetOp
//===----------------------------------------------------------------------===//

// %p = gpipe_rt.offset %base[(%dynamic +)? bytes]
ParseResult OffsetOp::parse(OpAsmParser &parser, OperationState &result) {
  OpAsmParser::UnresolvedOperand base, dynamic;
  int64_t bytes = 0;
  if (parser.parseOperand(base) || parser.parseLSquare())
    return failure();
  OptionalParseResult hasDynamic = parser.parseOptionalOperand(dynamic);
  if (hasDynamic.has_value() && (failed(*hasDynamic) || parser.parsePlus()))
    return failure();
  if (parser.parseInteger(bytes) || parser.parseRSquare() ||
      parser.parseOptionalAttrDict(result.attributes))
    return failure();
  Builder &b = parser.getBuilder();
  Type ptr = LLVM::LLVMPointerType::get(b.getContext());
  if (parser.resolveOperand(base, ptr, result.operands) ||
      (hasDynamic.has_value() &&
       parser.resolveOperand(dynamic, b.getI64Type(), result.operands)))
    return failure();
  result.getOrAddProperties<Properties>().bytes = b.getI64IntegerAttr(bytes);
  result.addTypes(ptr);
  return success();
}

void OffsetOp::print(OpAsmPrinter &p) {
  p << ' ' << getBase() << '[';
  if (getDynamic())
    p << getDynamic() << " + ";
  p << getBytes() << ']';
  p.printOptionalAttrDict((*this)->getAttrs(), {getBytesAttrName()});
}

OpFoldResult OffsetOp::fold(FoldAdaptor) {
  if (getBytes() == 0 && !getDynamic())
    return getBase();
  return {};
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

/// The type a kernel parameter is passed as.
static Type getParamType(MLIRContext *ctx, ::gpipe::abi::ArgType type) {
  switch (type) {
  case ::gpipe::abi::ArgType::Ptr:
    return LLVM::LLVMPointerType::get(ctx);
  case ::gpipe::abi::ArgType::I32:
    return IntegerType::get(ctx, 32);
  case ::gpipe::abi::ArgType::I64:
    return IntegerType::get(ctx, 64);
  case ::gpipe::abi::ArgType::F32:
    return Float32Type::get(ctx);
  case ::gpipe::abi::ArgType::F64:
    return Float64Type::get(ctx);
  }
  return Type();
}

FailureOr<SmallVector<Type>>
mlir::gpipe_rt::getKernelParamTypes(MLIRContext *ctx, StringRef kernel) {
  std::optional<::gpipe::abi::KernelId> id = ::gpipe::abi::lookupKernel(
      std::string_view(kernel.data(), kernel.size()));
  if (!id)
    return failure();
  SmallVector<Type> types;
  for (const ::gpipe::abi::KernelParam &param :
       ::gpipe::abi::getKernelSignature(*id))
    types.push_back(getParamType(ctx, param.type));
  return types;
}

LogicalResult KernelOp::verify() {
  StringRef name = getKernel();
  std::optional<::gpipe::abi::KernelId> kernel =
      ::gpipe::abi::lookupKernel(std::string_view(name.data(), name.size()));
  if (!kernel)
    return emitOpError("calls '")
           << name << "', which is no kernel of Kernels.def";
  const ::gpipe::abi::KernelSignature &signature =
      ::gpipe::abi::getKernelSignature(*kernel);
  if (signature.numParams != getArgs().size())
    return emitOpError("calls '")
           << name << "' with " << getArgs().size()
           << " arguments; its signature has " << signature.numParams;
  for (auto [i, param, arg] : llvm::enumerate(signature, getArgs())) {
    Type expected = getParamType(getContext(), param.type);
    if (arg.getType() != expected)
      return emitOpError("argument ")
             << i << " ('" << param.name << "') of '" << name << "' is "
             << arg.getType() << "; the kernel takes " << expected;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// CheckOp
//===----------------------------------------------------------------------===//

LogicalResult CheckOp::verify() {
  if (getSite().has_value() != (getRank() != nullptr))
    return emitOpError("reports a site to a rank: give both or neither");
  auto func = (*this)->getParentOfType<FunctionOpInterface>();
  if (!func)
    return emitOpError("must be inside a function");
  ArrayRef<Type> results = func.getResultTypes();
  if (results.size() != 1 || !results[0].isInteger(32))
    return emitOpError("returns the status from its function, which must "
                       "return one i32");
  return success();
}

#define GET_OP_CLASSES
#include "gpipe/Dialect/RT/IR/RTOps.cpp.inc"
