//===- FormLayers.cpp - Cut a network into nn.layer ops -------------------===//
//
// Implements `nn-form-layers`: finds the positions of a flat network body
// where exactly one activation is live (the cut points the pipeline
// partitioner may cut at) and wraps each segment between cut points into an
// isolated `nn.layer` with a readable name.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::gpipe::nn {
#define GEN_PASS_DEF_NNFORMLAYERSPASS
#include "gpipe/Dialect/NN/Transforms/Passes.h.inc"
} // namespace mlir::gpipe::nn

using namespace mlir;
using namespace mlir::gpipe::nn;

namespace {

/// One run of consecutive ops that becomes a layer.
struct Segment {
  SmallVector<Operation *> ops;
  bool hasAnchor = false;
};

} // namespace

/// "Free" ops compute only from parameters and constants: they are not
/// activations and are cloned into each layer that uses them.
static bool isFree(Operation *op, const llvm::DenseSet<Operation *> &free) {
  if (op->getNumRegions() != 0 || !isPure(op))
    return false;
  return llvm::all_of(op->getOperands(), [&](Value v) {
    Operation *def = v.getDefiningOp();
    return def && free.contains(def);
  });
}

/// The name scope of an op from its NameLoc: "/blocks.0/ln1/LayerNorm" ->
/// ["blocks.0", "ln1"].
static SmallVector<StringRef> scopeOf(Operation *op) {
  SmallVector<StringRef> parts;
  Location loc = op->getLoc();
  NameLoc nameLoc = dyn_cast<NameLoc>(loc);
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if ((nameLoc = dyn_cast<NameLoc>(l)))
        break;
  if (!nameLoc)
    return parts;
  StringRef name = nameLoc.getName().strref();
  name.split(parts, '/', -1, /*KeepEmpty=*/false);
  if (!parts.empty())
    parts.pop_back();
  return parts;
}

static std::string joinScope(ArrayRef<StringRef> parts) {
  std::string s;
  for (StringRef p : parts) {
    if (!s.empty())
      s += "/";
    s += p.str();
  }
  return s;
}

/// The common scope of a segment's ops, else the scope of its first anchor.
static std::string layerName(const Segment &seg) {
  std::optional<SmallVector<StringRef>> common;
  for (Operation *op : seg.ops) {
    SmallVector<StringRef> s = scopeOf(op);
    if (s.empty() && !op->hasTrait<mlir::gpipe::nn::OpTrait::LayerAnchor>())
      continue; // An unnamed helper op does not break the common scope.
    if (!common) {
      common = s;
      continue;
    }
    size_t n = 0;
    while (n < common->size() && n < s.size() && (*common)[n] == s[n])
      ++n;
    common->resize(n);
  }
  if (common && !common->empty())
    return joinScope(*common);
  for (Operation *op : seg.ops)
    if (op->hasTrait<mlir::gpipe::nn::OpTrait::LayerAnchor>())
      if (SmallVector<StringRef> s = scopeOf(op); !s.empty())
        return joinScope(s);
  return "";
}

/// Clones the free op defining `v` (and, recursively, its free operands)
/// into `body`, once per layer.
static Value materializeFree(Value v, OpBuilder &builder, IRMapping &mapping) {
  if (Value mapped = mapping.lookupOrNull(v))
    return mapped;
  Operation *def = v.getDefiningOp();
  for (Value operand : def->getOperands())
    materializeFree(operand, builder, mapping);
  Operation *clone = builder.clone(*def, mapping);
  return clone->getResult(cast<OpResult>(v).getResultNumber());
}

FailureOr<unsigned>
mlir::gpipe::nn::formLayers(func::FuncOp func, LayerGranularity granularity) {
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return func.emitOpError("expected a network body of one block"), failure();
  Block &body = func.getBody().front();
  if (!body.getOps<LayerOp>().empty())
    return 0u;

  // Classify ops and number the activation-producing ones.
  llvm::DenseSet<Operation *> free;
  SmallVector<Operation *> work;
  for (Operation &op : body.without_terminator()) {
    if (op.getNumRegions() != 0)
      return op.emitOpError("cannot form layers around an op with regions"),
             failure();
    if (isFree(&op, free))
      free.insert(&op);
    else
      work.push_back(&op);
  }
  if (work.empty())
    return 0u;
  llvm::DenseMap<Operation *, int64_t> index;
  for (auto [i, op] : llvm::enumerate(work))
    index[op] = i;
  const int64_t end = work.size(); // the terminator's position

  // Live range [def, lastUse) of each activation, in positions of `work`;
  // block arguments are defined at -1.
  auto lastUse = [&](Value v) {
    int64_t last = -1;
    for (Operation *user : v.getUsers()) {
      if (user == body.getTerminator())
        last = end;
      else if (auto it = index.find(user); it != index.end())
        last = std::max(last, it->second);
    }
    return last;
  };
  // liveAfter[i]: activations live between op i and op i+1.
  SmallVector<int64_t> delta(end + 2, 0);
  auto addRange = [&](int64_t def, int64_t last) {
    if (last <= def)
      return;
    delta[def + 1] += 1;
    delta[last + 1] -= 1;
  };
  for (BlockArgument arg : body.getArguments())
    addRange(-1, lastUse(arg));
  for (Operation *op : work)
    for (Value r : op->getResults())
      addRange(index[op], lastUse(r));

  SmallVector<Segment> segments(1);
  int64_t live = 0;
  live += delta[0];
  for (int64_t i = 0; i < end; ++i) {
    live += delta[i + 1];
    Segment &seg = segments.back();
    seg.ops.push_back(work[i]);
    seg.hasAnchor |= work[i]->hasTrait<mlir::gpipe::nn::OpTrait::LayerAnchor>();
    if (live == 1 && i + 1 < end)
      segments.emplace_back();
  }

  // Merge anchor-less segments into the preceding one (the first into the
  // next).
  if (granularity != LayerGranularity::Op && segments.size() > 1) {
    SmallVector<Segment> merged;
    for (Segment &seg : segments) {
      if (!merged.empty() && (!seg.hasAnchor || !merged.back().hasAnchor)) {
        merged.back().ops.append(seg.ops);
        merged.back().hasAnchor |= seg.hasAnchor;
        continue;
      }
      merged.push_back(std::move(seg));
    }
    segments = std::move(merged);
  }

  // Consecutive segments of one name scope (the halves of a transformer
  // block around its first residual add) form one layer.
  if (granularity == LayerGranularity::Scope && segments.size() > 1) {
    SmallVector<Segment> merged;
    std::string previous;
    for (Segment &seg : segments) {
      std::string name = layerName(seg);
      if (!merged.empty() && !name.empty() && name == previous) {
        merged.back().ops.append(seg.ops);
        merged.back().hasAnchor |= seg.hasAnchor;
        continue;
      }
      previous = name;
      merged.push_back(std::move(seg));
    }
    segments = std::move(merged);
  }

  // Build one nn.layer per segment.
  llvm::StringMap<unsigned> nameCount;
  OpBuilder builder(func.getContext());
  for (auto [layerIndex, seg] : llvm::enumerate(segments)) {
    llvm::DenseSet<Operation *> inSeg(seg.ops.begin(), seg.ops.end());
    SetVector<Value> inputs;
    SmallVector<Value> outputs;
    for (Operation *op : seg.ops) {
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if ((!def || !free.contains(def)) && !(def && inSeg.contains(def)))
          inputs.insert(v);
      }
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *u) {
              return !inSeg.contains(u) && !free.contains(u);
            }))
          outputs.push_back(r);
    }

    std::string name = layerName(seg);
    if (name.empty())
      name = "layer" + std::to_string(layerIndex);
    if (unsigned n = nameCount[name]++)
      name += "_" + std::to_string(n);

    builder.setInsertionPoint(seg.ops.front());
    auto layer = LayerOp::create(
        builder, seg.ops.front()->getLoc(), ValueRange(outputs).getTypes(),
        builder.getStringAttr(name), inputs.getArrayRef());
    Block *layerBody = builder.createBlock(&layer.getBody());
    IRMapping mapping;
    for (Value in : inputs)
      mapping.map(in, layerBody->addArgument(in.getType(), in.getLoc()));

    // Parameters and constants first, then the segment's ops in order.
    builder.setInsertionPointToStart(layerBody);
    for (Operation *op : seg.ops)
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp(); def && free.contains(def))
          materializeFree(v, builder, mapping);
    for (Operation *op : seg.ops) {
      Operation *clone = builder.clone(*op, mapping);
      for (auto [from, to] : llvm::zip(op->getResults(), clone->getResults()))
        mapping.map(from, to);
    }
    SmallVector<Value> yielded;
    for (Value out : outputs)
      yielded.push_back(mapping.lookup(out));
    YieldOp::create(builder, layer.getLoc(), yielded);

    for (auto [out, res] : llvm::zip(outputs, layer.getResults()))
      out.replaceAllUsesWith(res);
    for (Operation *op : llvm::reverse(seg.ops))
      op->erase();
  }

  // Free ops now live inside the layers that use them.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (free.contains(&op) && op.use_empty())
      op.erase();
  return static_cast<unsigned>(segments.size());
}

namespace {
struct NNFormLayersPass
    : public mlir::gpipe::nn::impl::NNFormLayersPassBase<NNFormLayersPass> {
  using NNFormLayersPassBase::NNFormLayersPassBase;
  void runOnOperation() override {
    if (failed(formLayers(getOperation(), granularity)))
      signalPassFailure();
  }
};
} // namespace
