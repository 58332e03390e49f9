//===- FormLayers.cpp - Cut a network into nn.layer ops -------------------===//
//
// Implements `nn-form-layers`: finds the positions of a flat network body
// where exactly one activation is live besides side values computed from the
// inputs alone (the cut points the pipeline partitioner may cut at) and
// wraps each segment between cut points into an isolated `nn.layer` with a
// readable name; side values cross a cut packed with the activation.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
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

FailureOr<unsigned> mlir::gpipe::nn::formLayers(func::FuncOp func,
                                                LayerGranularity granularity) {
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

  // Side values are computed from the inputs and constants alone, reading
  // no parameter (an attention mask, a position table): they are carried
  // along with the activation across a cut, packed with it into one tensor
  // (packRows). A residual skip reads parameters, so a block stays whole.
  llvm::DenseSet<Operation *> readsParam;
  for (Operation &op : body.without_terminator())
    if (free.contains(&op) &&
        (isa<ParamOp>(op) || llvm::any_of(op.getOperands(), [&](Value v) {
           Operation *def = v.getDefiningOp();
           return def && readsParam.contains(def);
         })))
      readsParam.insert(&op);
  llvm::DenseSet<Value> side;
  for (BlockArgument arg : body.getArguments())
    side.insert(arg);
  for (Operation *op : work) {
    bool fromData = llvm::all_of(op->getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def)
        return side.contains(v);
      return free.contains(def) ? !readsParam.contains(def) : side.contains(v);
    });
    if (fromData)
      for (Value r : op->getResults())
        side.insert(r);
  }

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
  struct Range {
    Value value;
    int64_t def, last;
  };
  SmallVector<Range> ranges;
  for (BlockArgument arg : body.getArguments())
    ranges.push_back({arg, -1, lastUse(arg)});
  for (Operation *op : work)
    for (Value r : op->getResults())
      ranges.push_back({r, index[op], lastUse(r)});
  // The activations live between op i and op i+1, in definition order.
  auto liveAfter = [&](int64_t i) {
    SmallVector<Value> live;
    for (const Range &r : ranges)
      if (r.def <= i && i < r.last)
        live.push_back(r.value);
    return live;
  };
  // A cut point: one activation live besides side values, all of them
  // packable into one tensor.
  auto isCut = [&](ArrayRef<Value> live) {
    int64_t main =
        llvm::count_if(live, [&](Value v) { return !side.contains(v); });
    // Before the first parameter is read, every value is the activation.
    if (main == 0)
      return live.size() == 1;
    if (main != 1)
      return false;
    return live.size() == 1 || canPackRows(ValueRange(live).getTypes());
  };

  SmallVector<Segment> segments(1);
  for (int64_t i = 0; i < end; ++i) {
    Segment &seg = segments.back();
    seg.ops.push_back(work[i]);
    seg.hasAnchor |= work[i]->hasTrait<mlir::gpipe::nn::OpTrait::LayerAnchor>();
    if (i + 1 < end && isCut(liveAfter(i)))
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

  // Build one nn.layer per segment. A layer's outputs are what is live
  // after it (its own results and side values it passes on); several are
  // packed into one tensor and unpacked at the start of the next layer.
  llvm::StringMap<unsigned> nameCount;
  OpBuilder builder(func.getContext());
  for (size_t layerIndex = 0; layerIndex < segments.size(); ++layerIndex) {
    Segment &seg = segments[layerIndex];
    bool last = layerIndex + 1 == segments.size();
    llvm::DenseSet<Operation *> inSeg(seg.ops.begin(), seg.ops.end());
    SetVector<Value> inputs;
    SetVector<Value> outputs;
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
          outputs.insert(r);
    }
    // Values defined before and used after the segment pass through it.
    Operation *lastOp = seg.ops.back();
    auto usedAfter = [&](Value v) {
      return llvm::any_of(v.getUsers(), [&](Operation *u) {
        return u->getBlock() == &body && lastOp->isBeforeInBlock(u) &&
               !free.contains(u);
      });
    };
    if (!last) {
      SmallVector<Value> passing;
      for (BlockArgument arg : body.getArguments())
        if (usedAfter(arg))
          passing.push_back(arg);
      for (Operation &op : body.without_terminator()) {
        if (&op == seg.ops.front())
          break;
        if (!free.contains(&op))
          for (Value r : op.getResults())
            if (usedAfter(r))
              passing.push_back(r);
      }
      for (Value v : passing) {
        inputs.insert(v);
        outputs.insert(v);
      }
    }

    std::string name = layerName(seg);
    if (name.empty())
      name = "layer" + std::to_string(layerIndex);
    if (unsigned n = nameCount[name]++)
      name += "_" + std::to_string(n);

    bool pack = !last && outputs.size() > 1;
    SmallVector<Type> resultTypes;
    if (pack) {
      auto first = cast<RankedTensorType>(outputs.front().getType());
      int64_t total = 0;
      for (Value v : outputs) {
        auto type = cast<RankedTensorType>(v.getType());
        total +=
            type.getNumElements() / std::max<int64_t>(1, type.getDimSize(0));
      }
      resultTypes.push_back(RankedTensorType::get({first.getDimSize(0), total},
                                                  first.getElementType()));
    } else {
      llvm::append_range(resultTypes,
                         ValueRange(outputs.getArrayRef()).getTypes());
    }

    builder.setInsertionPoint(seg.ops.front());
    auto layer =
        LayerOp::create(builder, seg.ops.front()->getLoc(), resultTypes,
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
    if (pack)
      yielded = {packRows(builder, layer.getLoc(), yielded)};
    YieldOp::create(builder, layer.getLoc(), yielded);

    // Later ops read the layer's results; packed ones through slices that
    // open the next segment (and so the next layer).
    SmallVector<Value> results(layer.getResults());
    if (pack) {
      builder.setInsertionPointAfter(layer);
      results = unpackRows(builder, layer.getLoc(), layer.getResult(0),
                           ValueRange(outputs.getArrayRef()).getTypes());
      SmallVector<Operation *> unpack;
      for (Operation *op = layer->getNextNode(); op != seg.ops.front();
           op = op->getNextNode())
        unpack.push_back(op);
      segments[layerIndex + 1].ops.insert(segments[layerIndex + 1].ops.begin(),
                                          unpack.begin(), unpack.end());
    }
    llvm::DenseSet<Operation *> unpackOps;
    for (Value r : results)
      if (Operation *def = r.getDefiningOp(); def && def != layer)
        unpackOps.insert(def);
    for (auto [index, res] : llvm::enumerate(results)) {
      Value out = outputs[index];
      out.replaceUsesWithIf(res, [&](OpOperand &use) {
        Operation *user = use.getOwner();
        return user != layer && !inSeg.contains(user) &&
               !unpackOps.contains(user) &&
               (user->getBlock() != &body || layer->isBeforeInBlock(user));
      });
    }
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
