//===- ModelImage.h - A loaded model library --------------------*- C++ -*-===//
//
// A ModelImage is a compiled model ready to run: its validated metadata
// (ModelMetadata.h), the initial parameter bytes and one native function
// per pipeline rank (Program.h), from a model library gpipe-compile
// produced or, for tests, from parts given in process. Loading a library
// for a target other than the CPU first loads that target's device backend
// (Device.h). Part of GPipeRuntimeEngine.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_MODELIMAGE_H
#define GPIPE_RUNTIME_MODELIMAGE_H

#include "gpipe/Runtime/ModelMetadata.h"
#include "gpipe/Runtime/Program.h"
#include "gpipe/Runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gpipe::rt {

/// A loaded model: metadata, initial data and the rank functions. Copies
/// share the library, which stays loaded while any copy lives.
class ModelImage {
public:
  /// dlopens the model library at `path` (RTLD_NOW | RTLD_LOCAL), checks
  /// its ABI version, parses its metadata and resolves every rank's symbol.
  static Status load(const std::string &path, ModelImage &image);
  /// An in-process model (tests): `metadataJson`, initial data (`dataSize`
  /// bytes at `data`, may be null when no parameter uses "data") and one
  /// function per rank.
  static Status fromParts(std::string_view metadataJson, const uint8_t *data,
                          size_t dataSize,
                          std::vector<gpipe_model_rank_fn> rankFunctions,
                          ModelImage &image);

  const ModelMetadata &metadata() const { return meta; }
  /// gpipe_model_data(): the bytes "data" parameters start from.
  const uint8_t *data() const { return initialData; }
  gpipe_model_rank_fn rankFunction(int64_t rank) const {
    return functions[size_t(rank)];
  }
  /// The evaluation program of `rank` (metadata().eval; null without).
  gpipe_model_rank_fn evalFunction(int64_t rank) const {
    return size_t(rank) < evalFunctions.size() ? evalFunctions[size_t(rank)]
                                               : nullptr;
  }
  /// The library path ("<in-process>" for fromParts).
  const std::string &path() const { return libraryPath; }

  /// The model library's own gpipe_rt_last_error / gpipe_rt_clear_error
  /// when it carries a copy of the kernels (null otherwise): kernel
  /// messages are read from both copies.
  const char *(*libraryLastError)(void) = nullptr;
  void (*libraryClearError)(void) = nullptr;

private:
  ModelMetadata meta;
  const uint8_t *initialData = nullptr;
  std::vector<gpipe_model_rank_fn> functions, evalFunctions;
  std::string libraryPath;
  std::shared_ptr<void> handle;
};

/// Same as ModelImage::load.
Status loadModelLibrary(const std::string &path, ModelImage &image);

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_MODELIMAGE_H
