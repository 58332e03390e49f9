//===- FuzzSafeTensors.cpp - libFuzzer target for safetensors --*- C++ -*-===//
//
// Validates arbitrary bytes as a safetensors file and, when they pass, reads
// every tensor both as floats and as integers: a file the parser accepts
// must never make a read go out of bounds or misbehave.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/SafeTensors.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace gpipe::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  SafeTensorsFile file;
  Status status = SafeTensorsFile::parse(
      std::vector<uint8_t>(data, data + size), "fuzz.safetensors", file);
  if (!status.ok()) {
    if (status.message().empty()) {
      std::fprintf(stderr, "rejected without a message\n");
      std::abort();
    }
    return 0;
  }
  for (const SafeTensorInfo &info : file.tensors()) {
    if (file.find(info.name) != &info) {
      std::fprintf(stderr, "find('%s') does not return its entry\n",
                   info.name.c_str());
      std::abort();
    }
    std::vector<float> floats;
    std::vector<int64_t> ints, shape;
    Status f = file.readF32(info.name, floats, &shape);
    if (f.ok() && int64_t(floats.size()) != info.numElements()) {
      std::fprintf(stderr, "readF32('%s') returned %zu values, not %lld\n",
                   info.name.c_str(), floats.size(),
                   (long long)info.numElements());
      std::abort();
    }
    Status i = file.readI64(info.name, ints, &shape);
    if (i.ok() && int64_t(ints.size()) != info.numElements()) {
      std::fprintf(stderr, "readI64('%s') returned %zu values, not %lld\n",
                   info.name.c_str(), ints.size(),
                   (long long)info.numElements());
      std::abort();
    }
  }
  return 0;
}
