//===- NNLayerLoc.cpp - Which layer an op came from -----------------------===//
//
// Implements the layer marks of NNLayerLoc.h.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNLayerLoc.h"
#include "gpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;

static constexpr llvm::StringLiteral kLayerKey = "nn.layer";

StringAttr mlir::gpipe::nn::getLayerOfLoc(Location loc) {
  auto fused = dyn_cast<FusedLoc>(loc);
  if (!fused)
    return nullptr;
  auto dict = dyn_cast_or_null<DictionaryAttr>(fused.getMetadata());
  if (!dict)
    return nullptr;
  return dict.getAs<StringAttr>(kLayerKey);
}

Location mlir::gpipe::nn::getLayerLoc(Location loc, StringAttr layer) {
  if (getLayerOfLoc(loc))
    return loc;
  MLIRContext *ctx = loc.getContext();
  auto metadata = DictionaryAttr::get(
      ctx, {NamedAttribute(StringAttr::get(ctx, kLayerKey), layer)});
  return FusedLoc::get(ctx, {loc}, metadata);
}

Location mlir::gpipe::nn::stripLayerLoc(Location loc) {
  if (!getLayerOfLoc(loc))
    return loc;
  ArrayRef<Location> inner = cast<FusedLoc>(loc).getLocations();
  return inner.size() == 1 ? inner.front()
                           : FusedLoc::get(loc.getContext(), inner);
}

StringAttr mlir::gpipe::nn::getLayerOf(Operation *op) {
  StringAttr outermost;
  for (Operation *at = op; at && !isa<FunctionOpInterface>(at);
       at = at->getParentOp())
    if (auto layer = dyn_cast<LayerOp>(at))
      outermost = layer.getNameAttr();
  return outermost ? outermost : getLayerOfLoc(op->getLoc());
}

StringAttr mlir::gpipe::nn::getNameOfLoc(Location loc) {
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location part : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(part))
        return name.getName();
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName();
  return {};
}
