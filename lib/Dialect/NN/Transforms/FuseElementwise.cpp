//===- FuseElementwise.cpp - Group elementwise chains into nn.fused -------===//
//
// Implements `nn-fuse-elementwise` (see Passes.td): greedy, in block order,
// one group per op at most; the groups of two or more ops become nn.fused.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNLayerLoc.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"
#include "gpipe/Dialect/NN/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::gpipe::nn {
#define GEN_PASS_DEF_NNFUSEELEMENTWISEPASS
#include "gpipe/Dialect/NN/Transforms/Passes.h.inc"
} // namespace mlir::gpipe::nn

using namespace mlir;
using namespace mlir::gpipe::nn;

namespace {

struct Group {
  SmallVector<Operation *> ops;
  ArrayRef<int64_t> shape;
  StringAttr layer;
};

ArrayRef<int64_t> resultShape(Operation *op) {
  return cast<RankedTensorType>(op->getResult(0).getType()).getShape();
}

/// Groups the fusible ops of `block` (not of nested blocks).
class BlockFuser {
public:
  explicit BlockFuser(Block &block) : block(block) {}

  void run() {
    for (Operation &op : block)
      if (FusedOp::isFusible(&op))
        place(&op);
    for (Group &group : groups)
      if (group.ops.size() > 1)
        fuse(group);
  }

private:
  /// Puts `op` into the groups of its operands' producers that can take
  /// it (merged into one when there are several), or into a group of its
  /// own.
  void place(Operation *op) {
    ArrayRef<int64_t> shape = resultShape(op);
    StringAttr layer = getLayerOf(op);
    SmallVector<size_t> joined;
    for (Value operand : op->getOperands()) {
      auto it = groupOf.find(operand.getDefiningOp());
      if (it == groupOf.end() || llvm::is_contained(joined, it->second))
        continue;
      Group &group = groups[it->second];
      if (group.shape == shape && group.layer == layer && readAfter(group, op))
        joined.push_back(it->second);
    }
    if (joined.empty()) {
      groupOf[op] = groups.size();
      groups.push_back(Group{{op}, shape, layer});
      return;
    }
    Group &into = groups[joined.front()];
    for (size_t other : llvm::drop_begin(joined)) {
      for (Operation *member : groups[other].ops) {
        into.ops.push_back(member);
        groupOf[member] = joined.front();
      }
      groups[other].ops.clear();
    }
    // Block order: every member after the members it reads.
    llvm::sort(into.ops, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    into.ops.push_back(op);
    groupOf[op] = joined.front();
  }

  /// Whether every op outside `group` that reads a member's result comes
  /// after `op` (where the fused op will be).
  bool readAfter(const Group &group, Operation *op) {
    for (Operation *member : group.ops)
      for (Operation *user : member->getUsers()) {
        Operation *at = block.findAncestorOpInBlock(*user);
        if (!at || at == op || llvm::is_contained(group.ops, at))
          continue;
        if (at->isBeforeInBlock(op))
          return false;
      }
    return true;
  }

  /// Replaces the group's ops by one nn.fused at the last member.
  void fuse(Group &group) {
    llvm::SmallDenseSet<Operation *, 8> members(group.ops.begin(),
                                                group.ops.end());
    llvm::SetVector<Value> inputs;
    SmallVector<Value> outputs;
    for (Operation *op : group.ops) {
      for (Value operand : op->getOperands())
        if (!members.contains(operand.getDefiningOp()))
          inputs.insert(operand);
      Value result = op->getResult(0);
      if (llvm::any_of(result.getUsers(), [&](Operation *user) {
            return !members.contains(user);
          }))
        outputs.push_back(result);
    }
    Operation *last = group.ops.back();
    OpBuilder builder(last);
    SmallVector<Type> types;
    for (Value v : outputs)
      types.push_back(v.getType());
    auto fused =
        FusedOp::create(builder, last->getLoc(), types, inputs.getArrayRef());
    Block *body = new Block();
    fused.getBody().push_back(body);
    IRMapping mapping;
    for (Value in : inputs)
      mapping.map(in, body->addArgument(in.getType(), in.getLoc()));
    OpBuilder inner = OpBuilder::atBlockEnd(body);
    for (Operation *op : group.ops)
      inner.clone(*op, mapping);
    SmallVector<Value> yielded;
    for (Value v : outputs)
      yielded.push_back(mapping.lookup(v));
    YieldOp::create(inner, last->getLoc(), yielded);
    for (auto [from, to] : llvm::zip(outputs, fused.getResults()))
      from.replaceUsesWithIf(to, [&](OpOperand &use) {
        return !members.contains(use.getOwner());
      });
    for (Operation *op : llvm::reverse(group.ops))
      op->erase();
  }

  Block &block;
  std::vector<Group> groups;
  llvm::DenseMap<Operation *, size_t> groupOf;
};

/// Fuses `block` and the blocks nested in it (layer and remat bodies),
/// innermost first; never inside an nn.fused.
void fuseBlock(Block &block) {
  for (Operation &op : block)
    if (!isa<FusedOp>(op))
      for (Region &region : op.getRegions())
        for (Block &inner : region)
          fuseBlock(inner);
  BlockFuser(block).run();
}

struct NNFuseElementwisePass
    : public mlir::gpipe::nn::impl::NNFuseElementwisePassBase<
          NNFuseElementwisePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    for (Block &block : func.getBody())
      fuseBlock(block);
  }
};

} // namespace
