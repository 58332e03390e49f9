//===- FuzzMetadata.cpp - libFuzzer target for model metadata --*- C++ -*-===//
//
// Parses arbitrary text as the metadata JSON a model library carries
// (ModelMetadata::parse, what ModelImage::load runs on the string the
// library returns). Metadata the parser accepts has been checked in full:
// the engine indexes arenas and tables with it without further checks, so
// the target also walks what it accepted, as the engine does.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/ModelMetadata.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

using namespace gpipe::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view json(reinterpret_cast<const char *>(data), size);
  // Half the inputs with a data section of a size taken from the input, so
  // that parameters initialized from data are checked against a bound too.
  std::optional<size_t> dataSize;
  if (size && (data[0] & 1))
    dataSize = size_t(data[size - 1]) * 16;
  ModelMetadata meta;
  Status status = ModelMetadata::parse(json, meta, dataSize);
  if (!status.ok()) {
    if (status.message().empty()) {
      std::fprintf(stderr, "rejected without a message\n");
      std::abort();
    }
    return 0;
  }
  for (const RankPlan &rank : meta.ranks)
    for (const StagePlan &stage : rank.stages)
      if (rank.findStage(stage.stage) == nullptr) {
        std::fprintf(stderr, "rank cannot find its own stage\n");
        std::abort();
      }
  for (const ParameterSpec &p : meta.parameters)
    if (meta.findParameter(p.name) == nullptr) {
      std::fprintf(stderr, "parameter '%s' cannot be found\n", p.name.c_str());
      std::abort();
    }
  (void)meta.stateMultiple();
  (void)meta.batchSize();
  return 0;
}
