//===- RTToLLVM.cpp - gpipe_rt to the LLVM dialect --------------*- C++ -*-===//
//
// Implements `convert-rt-to-llvm`: the `gpipe_rt` ops become LLVM calls into
// the runtime and its kernel library, read-only globals and element
// accesses; everything around them (func, scf, cf, arith, math, vector)
// goes through upstream's conversions. The structured loops are lowered to
// blocks first, because a `gpipe_rt.check` leaves its function through a
// branch.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Conversion/RTToLLVM/RTToLLVM.h"

#include "gpipe/Conversion/Passes.h"
#include "gpipe/Dialect/RT/IR/RTOps.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

#include <cstring>
#include <memory>

namespace mlir::gpipe {
#define GEN_PASS_DEF_CONVERTRTTOLLVMPASS
#include "gpipe/Conversion/Passes.h.inc"
} // namespace mlir::gpipe

using namespace mlir;
using namespace mlir::gpipe_rt;

namespace {

/// The functions a module's calls go to, declared once each at the end of
/// the module (a lookup per call would scan the module's symbols).
struct Callees {
  llvm::StringMap<LLVM::LLVMFuncOp> declared;

  /// A call of `callee` at `op`, declared from the operands' and result's
  /// types on first use.
  LLVM::CallOp call(ConversionPatternRewriter &rewriter, Operation *op,
                    StringRef callee, Type result, ValueRange args) {
    LLVM::LLVMFuncOp &func = declared[callee];
    if (!func) {
      auto module = op->getParentOfType<ModuleOp>();
      func = module.lookupSymbol<LLVM::LLVMFuncOp>(callee);
      if (!func) {
        SmallVector<Type> types(args.getTypes());
        Type resultType =
            result ? result : LLVM::LLVMVoidType::get(rewriter.getContext());
        OpBuilder::InsertionGuard guard(rewriter);
        rewriter.setInsertionPointToEnd(module.getBody());
        func = LLVM::LLVMFuncOp::create(
            rewriter, module.getLoc(), callee,
            LLVM::LLVMFunctionType::get(resultType, types));
      }
    }
    return LLVM::CallOp::create(rewriter, op->getLoc(), func, args);
  }
};

//===----------------------------------------------------------------------===//
// Addresses and read-only data
//===----------------------------------------------------------------------===//

struct OffsetOpLowering : ConvertOpToLLVMPattern<OffsetOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(OffsetOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value bytes = adaptor.getDynamic();
    if (op.getBytes() != 0 || !bytes) {
      Value fixed =
          LLVM::ConstantOp::create(rewriter, loc, rewriter.getI64Type(),
                                   rewriter.getI64IntegerAttr(op.getBytes()));
      bytes = bytes ? LLVM::AddOp::create(rewriter, loc, fixed, bytes) : fixed;
    }
    rewriter.replaceOpWithNewOp<LLVM::GEPOp>(
        op, op.getType(), rewriter.getI8Type(), adaptor.getBase(),
        ArrayRef<LLVM::GEPArg>{bytes});
    return success();
  }
};

struct NullOpLowering : ConvertOpToLLVMPattern<NullOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(NullOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<LLVM::ZeroOp>(op, op.getType());
    return success();
  }
};

/// The read-only globals of a module, one per distinct content: shared by
/// the patterns of `gpipe_rt.bytes` and `gpipe_rt.ints`.
struct ReadOnlyData {
  llvm::StringMap<LLVM::GlobalOp> globals;
  int64_t count = 0;

  Value addressOf(ConversionPatternRewriter &rewriter, Operation *op,
                  StringRef bytes, StringRef prefix) {
    std::string key = (prefix + ":" + bytes).str();
    LLVM::GlobalOp &global = globals[key];
    if (!global) {
      auto module = op->getParentOfType<ModuleOp>();
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToEnd(module.getBody());
      // A global is never empty (LLVM arrays of zero elements are).
      std::string data = bytes.empty() ? std::string(1, '\0') : bytes.str();
      auto type = LLVM::LLVMArrayType::get(rewriter.getI8Type(), data.size());
      global = LLVM::GlobalOp::create(
          rewriter, op->getLoc(), type, /*isConstant=*/true,
          LLVM::Linkage::Internal,
          ("__gpipe_" + prefix + std::to_string(count++)).str(),
          rewriter.getStringAttr(data), /*alignment=*/64);
    }
    return LLVM::AddressOfOp::create(rewriter, op->getLoc(), global);
  }
};

struct BytesOpLowering : ConvertOpToLLVMPattern<BytesOp> {
  BytesOpLowering(LLVMTypeConverter &converter,
                  std::shared_ptr<ReadOnlyData> data)
      : ConvertOpToLLVMPattern(converter), data(std::move(data)) {}
  LogicalResult
  matchAndRewrite(BytesOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op,
                       data->addressOf(rewriter, op, op.getValue(), "const"));
    return success();
  }
  std::shared_ptr<ReadOnlyData> data;
};

struct IntsOpLowering : ConvertOpToLLVMPattern<IntsOp> {
  IntsOpLowering(LLVMTypeConverter &converter,
                 std::shared_ptr<ReadOnlyData> data)
      : ConvertOpToLLVMPattern(converter), data(std::move(data)) {}
  LogicalResult
  matchAndRewrite(IntsOp op, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ArrayRef<int64_t> values = op.getValues();
    std::string bytes(values.size() * sizeof(int64_t), '\0');
    if (!values.empty())
      std::memcpy(bytes.data(), values.data(), bytes.size());
    rewriter.replaceOp(op, data->addressOf(rewriter, op, bytes, "shape"));
    return success();
  }
  std::shared_ptr<ReadOnlyData> data;
};

struct PtrArrayOpLowering : ConvertOpToLLVMPattern<PtrArrayOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(PtrArrayOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type ptrTy = op.getType();
    auto arrayTy =
        LLVM::LLVMArrayType::get(ptrTy, adaptor.getElements().size());
    Value one = LLVM::ConstantOp::create(rewriter, loc, rewriter.getI64Type(),
                                         rewriter.getI64IntegerAttr(1));
    Value array = LLVM::AllocaOp::create(rewriter, loc, ptrTy, arrayTy, one, 8);
    for (auto [k, element] : llvm::enumerate(adaptor.getElements())) {
      Value slot = LLVM::GEPOp::create(rewriter, loc, ptrTy, ptrTy, array,
                                       ArrayRef<LLVM::GEPArg>{int32_t(k)});
      LLVM::StoreOp::create(rewriter, loc, element, slot);
    }
    rewriter.replaceOp(op, array);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

struct KernelOpLowering : ConvertOpToLLVMPattern<KernelOp> {
  KernelOpLowering(LLVMTypeConverter &converter,
                   std::shared_ptr<Callees> callees, StringRef target)
      : ConvertOpToLLVMPattern(converter), callees(std::move(callees)),
        target(target) {}
  LogicalResult
  matchAndRewrite(KernelOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    std::string callee = "gpipe_rt_" + target + "_" + op.getKernel().str();
    rewriter.replaceOp(op, callees
                               ->call(rewriter, op, callee,
                                      rewriter.getI32Type(), adaptor.getArgs())
                               .getResults());
    return success();
  }
  std::shared_ptr<Callees> callees;
  std::string target;
};

/// gpipe_rt.fused_rows: gpipe_rt_cpu_fused_rows(&callee, argv, rows,
/// row_elements).
struct FusedRowsOpLowering : ConvertOpToLLVMPattern<FusedRowsOp> {
  FusedRowsOpLowering(LLVMTypeConverter &converter,
                      std::shared_ptr<Callees> callees)
      : ConvertOpToLLVMPattern(converter), callees(std::move(callees)) {}
  LogicalResult
  matchAndRewrite(FusedRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type ptrTy = adaptor.getArgv().getType();
    Value callee =
        LLVM::AddressOfOp::create(rewriter, loc, ptrTy, op.getCallee());
    auto i64 = [&](int64_t v) -> Value {
      return LLVM::ConstantOp::create(rewriter, loc, rewriter.getI64Type(),
                                      rewriter.getI64IntegerAttr(v));
    };
    callees->call(rewriter, op, "gpipe_rt_cpu_fused_rows", Type(),
                  ValueRange{callee, adaptor.getArgv(), i64(op.getRows()),
                             i64(op.getRowElements())});
    rewriter.eraseOp(op);
    return success();
  }
  std::shared_ptr<Callees> callees;
};

/// Any op of RTOps.td's RT_CallbackOp: a call of `OpT::kFunction` with the
/// op's operands.
template <typename OpT>
struct CallbackOpLowering : ConvertOpToLLVMPattern<OpT> {
  CallbackOpLowering(LLVMTypeConverter &converter,
                     std::shared_ptr<Callees> callees)
      : ConvertOpToLLVMPattern<OpT>(converter), callees(std::move(callees)) {}
  LogicalResult
  matchAndRewrite(OpT op, typename OpT::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type result =
        op->getNumResults() == 1 ? op->getResult(0).getType() : Type();
    LLVM::CallOp call = callees->call(rewriter, op, OpT::kFunction, result,
                                      adaptor.getOperands());
    if (result)
      rewriter.replaceOp(op, call.getResults());
    else
      rewriter.eraseOp(op);
    return success();
  }
  std::shared_ptr<Callees> callees;
};

/// `if (status != 0) { [gpipe_rt_kernel_error(rank, site, status);] return
/// status; }`, through one failure block per function and kind (with or
/// without the report), as cf.assert lowers.
struct CheckOpLowering : ConvertOpToLLVMPattern<CheckOp> {
  /// Per function body and kind (reporting or not): its failure block.
  using FailureBlocks = DenseMap<std::pair<Region *, int>, Block *>;

  CheckOpLowering(LLVMTypeConverter &converter,
                  std::shared_ptr<Callees> callees)
      : ConvertOpToLLVMPattern(converter), callees(std::move(callees)),
        blocks(std::make_shared<FailureBlocks>()) {}

  LogicalResult
  matchAndRewrite(CheckOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Region *body = op->getParentRegion();
    if (!body->getParentOp()->hasTrait<OpTrait::IsIsolatedFromAbove>())
      return rewriter.notifyMatchFailure(
          op, "needs its function's body as blocks (lower scf first)");
    Type i32 = rewriter.getI32Type(), i64 = rewriter.getI64Type();
    bool report = op.getSite().has_value();
    Block *&fail = (*blocks)[{body, report ? 1 : 0}];
    if (!fail) {
      OpBuilder::InsertionGuard guard(rewriter);
      SmallVector<Type> types = {i32};
      SmallVector<Location> locs = {loc};
      if (report) {
        types.append({i64, adaptor.getRank().getType()});
        locs.append({loc, loc});
      }
      fail = rewriter.createBlock(body, body->end(), types, locs);
      Value status = fail->getArgument(0);
      if (report)
        callees->call(
            rewriter, op, "gpipe_rt_kernel_error", i32,
            ValueRange{fail->getArgument(2), fail->getArgument(1), status});
      LLVM::ReturnOp::create(rewriter, loc, status);
    }
    Block *before = op->getBlock();
    Block *after = rewriter.splitBlock(before, std::next(op->getIterator()));
    rewriter.setInsertionPointToEnd(before);
    Value zero = LLVM::ConstantOp::create(rewriter, loc, i32,
                                          rewriter.getI32IntegerAttr(0));
    Value failed = LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::ne,
                                        adaptor.getStatus(), zero);
    SmallVector<Value> failArgs = {adaptor.getStatus()};
    if (report) {
      failArgs.push_back(LLVM::ConstantOp::create(
          rewriter, loc, i64, rewriter.getI64IntegerAttr(*op.getSite())));
      failArgs.push_back(adaptor.getRank());
    }
    LLVM::CondBrOp::create(rewriter, loc, failed, fail, failArgs, after,
                           ValueRange());
    rewriter.eraseOp(op);
    return success();
  }
  std::shared_ptr<Callees> callees;
  std::shared_ptr<FailureBlocks> blocks;
};

//===----------------------------------------------------------------------===//
// Elements
//===----------------------------------------------------------------------===//

/// The element type of a `gpipe_rt.load`/`store` value and its alignment.
std::pair<Type, unsigned> getElement(Type type) {
  Type element = getElementTypeOrSelf(type);
  return {element, element.isF32() ? 4u : 1u};
}

struct LoadOpLowering : ConvertOpToLLVMPattern<LoadOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(LoadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto [element, alignment] = getElement(op.getType());
    Value ptr = LLVM::GEPOp::create(
        rewriter, op.getLoc(), adaptor.getBase().getType(), element,
        adaptor.getBase(), ArrayRef<LLVM::GEPArg>{adaptor.getIndex()});
    rewriter.replaceOpWithNewOp<LLVM::LoadOp>(op, op.getType(), ptr, alignment);
    return success();
  }
};

struct StoreOpLowering : ConvertOpToLLVMPattern<StoreOp> {
  using ConvertOpToLLVMPattern::ConvertOpToLLVMPattern;
  LogicalResult
  matchAndRewrite(StoreOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto [element, alignment] = getElement(op.getValue().getType());
    Value ptr = LLVM::GEPOp::create(
        rewriter, op.getLoc(), adaptor.getBase().getType(), element,
        adaptor.getBase(), ArrayRef<LLVM::GEPArg>{adaptor.getIndex()});
    rewriter.replaceOpWithNewOp<LLVM::StoreOp>(op, adaptor.getValue(), ptr,
                                               alignment);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct ConvertRTToLLVMPass
    : public mlir::gpipe::impl::ConvertRTToLLVMPassBase<ConvertRTToLLVMPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();

    // Loops to blocks: a check branches out of its function.
    {
      RewritePatternSet patterns(ctx);
      populateSCFToControlFlowConversionPatterns(patterns);
      ConversionTarget target(*ctx);
      target.addIllegalDialect<scf::SCFDialect>();
      target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
      if (failed(applyPartialConversion(module, target, std::move(patterns))))
        return signalPassFailure();
    }

    std::string kernelTarget = "cpu";
    if (auto attr =
            module->getAttrOfType<StringAttr>(RTDialect::kTargetAttrName)) {
      kernelTarget = attr.getValue().str();
      module->removeAttr(RTDialect::kTargetAttrName);
    }
    LLVMConversionTarget target(*ctx);
    target.addLegalOp<ModuleOp>();
    LLVMTypeConverter converter(ctx);
    RewritePatternSet patterns(ctx);
    arith::populateArithToLLVMConversionPatterns(converter, patterns);
    cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
    populateFuncToLLVMConversionPatterns(converter, patterns);
    populateMathToLLVMConversionPatterns(converter, patterns);
    populateVectorToLLVMConversionPatterns(converter, patterns);
    populateRTToLLVMConversionPatterns(converter, patterns, kernelTarget);
    if (failed(applyFullConversion(module, target, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

void mlir::gpipe_rt::populateRTToLLVMConversionPatterns(
    LLVMTypeConverter &converter, RewritePatternSet &patterns,
    StringRef target) {
  auto data = std::make_shared<ReadOnlyData>();
  auto callees = std::make_shared<Callees>();
  patterns.add<OffsetOpLowering, NullOpLowering, PtrArrayOpLowering,
               LoadOpLowering, StoreOpLowering>(converter);
  patterns.add<BytesOpLowering, IntsOpLowering>(converter, data);
  patterns
      .add<CallbackOpLowering<ActionBeginOp>, CallbackOpLowering<ActionEndOp>,
           CallbackOpLowering<LayerOp>, CallbackOpLowering<RngKeyOp>,
           CallbackOpLowering<LoadInputOp>, CallbackOpLowering<LoadLabelsOp>,
           CallbackOpLowering<SendOp>, CallbackOpLowering<RecvOp>,
           CallbackOpLowering<ReportLossOp>, CallbackOpLowering<ReportOutputOp>,
           CallbackOpLowering<StepOp>, CallbackOpLowering<ReduceGradOp>,
           CallbackOpLowering<SumTiedOp>, CallbackOpLowering<ClipGradOp>,
           CheckOpLowering, FusedRowsOpLowering>(converter, callees);
  patterns.add<KernelOpLowering>(converter, callees, target);
}
