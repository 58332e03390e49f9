//===- Dataset.h - The samples a run trains on ------------------*- C++ -*-===//
//
// A Dataset hands out the input and label bytes of one sample at a time, in
// the layout the model's metadata describes (ModelMetadata::input and
// labels): read from a safetensors file, checked against the model, or
// generated from the built-in data the metadata's data_hint names. Part of
// GPipeRuntimeIO.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_DATASET_H
#define GPIPE_RUNTIME_DATASET_H

#include "gpipe/Runtime/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gpipe::rt {

struct ModelMetadata;
class SafeTensorsFile;

/// Samples for the model's input and labels. Sample indices are taken
/// modulo numSamples().
class Dataset {
public:
  virtual ~Dataset();
  /// For the run's header, e.g. "data.safetensors (1000 samples)".
  virtual std::string describe() const = 0;
  virtual int64_t numSamples() const = 0;
  /// Generated without end (numSamples() is only a bound): it has no
  /// epochs.
  virtual bool isEndless() const { return false; }
  /// Writes sample `sample`'s input (metadata.input.sampleBytes() bytes).
  virtual void copyInput(int64_t sample, uint8_t *out) const = 0;
  /// Writes sample `sample`'s labels (metadata.labels->sampleBytes()).
  virtual void copyLabels(int64_t sample, uint8_t *out) const = 0;
};

/// Reads `input` (and `labels` when the model has labels) from a safetensors
/// file, checking names, shapes, dtypes and value ranges against
/// `metadata`. A model with several inputs (TensorSpec::parts) reads each by
/// its name and packs them into the input's rows, or reads them already
/// packed as `input` [N, S].
Status loadDataset(const std::string &path, const ModelMetadata &metadata,
                   std::unique_ptr<Dataset> &dataset);
/// Same, from a file already in memory.
Status datasetFromSafeTensors(const SafeTensorsFile &file,
                              const ModelMetadata &metadata,
                              std::unique_ptr<Dataset> &dataset);
/// The built-in data the metadata's data_hint names ("text-char",
/// "classification" or "images"), generated from `seed`. A model with
/// several inputs has none. With `evaluation` > 0, its evaluation split:
/// that many samples training never draws (classification and images: the
/// samples after training's pool, of the same teacher or templates; text:
/// windows of the same text drawn by sample indices training never
/// reaches).
Status makeBuiltinDataset(const ModelMetadata &metadata, uint64_t seed,
                          std::unique_ptr<Dataset> &dataset,
                          int64_t evaluation = 0);

/// The order in which epoch `epoch` (from 0) takes `n` samples: 0..n-1,
/// or with `shuffle` a permutation drawn from `seed` and the epoch, the
/// same on every platform. `order` is resized to n (no allocation when it
/// already has that size).
void getEpochOrder(int64_t n, bool shuffle, uint64_t seed, int64_t epoch,
                   std::vector<int64_t> &order);

/// The built-in English text of "text-char" data.
std::string_view defaultText();
/// The 65 symbols of "text-char" data, id = position.
std::string_view textAlphabet();
/// `c`'s id in textAlphabet(); characters outside it map to ' '.
int64_t textCharId(char c);

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_DATASET_H
