//===- Metrics.h - Training metrics files -----------------------*- C++ -*-===//
//
// What gpipe-run records per step for people and plotting tools: a JSON
// lines file (one object per step), TensorBoard event files (the scalars
// TensorBoard's SCALARS tab draws), and an SVG picture of the loss and
// learning-rate curves. Every writer is opened before training starts, so
// an unwritable path fails before any step runs. Part of GPipeRuntimeIO.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_METRICS_H
#define GPIPE_RUNTIME_METRICS_H

#include "gpipe/Runtime/Status.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gpipe::rt {

/// One step's scalars, by name ("loss", "lr", "grad_norm", ...), in the
/// order they are written; NaN values are written as null (JSON lines) or
/// left out (TensorBoard).
struct MetricsRecord {
  int64_t step = 0;
  /// The epoch (from 1) when the run goes by epochs, else 0.
  int64_t epoch = 0;
  std::vector<std::pair<std::string, double>> scalars;
  /// Per worker: the fraction of the step spent computing.
  std::vector<double> busy;
  /// Seconds since the epoch when the step ended.
  double wallTime = 0.0;
};

/// `--metrics FILE.jsonl`: one JSON object per line and step, flushed as it
/// is written: {"step": 3, "loss": 2.1, "lr": 0.001, ..., "busy": [...]}.
class JsonLinesWriter {
public:
  /// Opens `path` (truncated, or appended to when `append`: a resumed run
  /// continues its file). Fails naming the path when it cannot be written.
  static Status open(const std::string &path, bool append,
                     std::unique_ptr<JsonLinesWriter> &out);
  ~JsonLinesWriter();
  Status write(const MetricsRecord &record);

private:
  std::string path;
  std::FILE *file = nullptr;
};

/// `--tensorboard DIR`: a TensorBoard event file
/// DIR/events.out.tfevents.<seconds>.<host>.gpipe, each scalar a summary
/// value tagged by its name ("train/loss"). The format is TensorFlow's
/// record file (little-endian length, masked CRC-32C of the length, the
/// bytes, masked CRC-32C of the bytes) of Event protocol buffers, the first
/// one holding file_version "brain.Event:2".
class TensorBoardWriter {
public:
  static Status open(const std::string &directory,
                     std::unique_ptr<TensorBoardWriter> &out);
  ~TensorBoardWriter();
  Status write(const MetricsRecord &record);
  const std::string &getPath() const { return path; }

private:
  Status writeEvent(const std::string &bytes);
  std::string path;
  std::FILE *file = nullptr;
};

/// CRC-32C (Castagnoli) of `size` bytes, and TensorFlow's masking of it
/// ((crc >> 15 | crc << 17) + 0xa282ead8) for record files.
uint32_t crc32c(const void *data, size_t size);
uint32_t maskCrc32c(uint32_t crc);

/// `text` with XML's special characters (< > & ") escaped, for SVG.
std::string escapeXml(const std::string &text);

/// `--plot FILE.svg`: the loss (and every other curve named in `curves`)
/// and the learning rate over the steps, one panel each, as a picture.
/// `curves` are scalar names of the records.
Status writeCurvesSvg(const std::string &path, const std::string &title,
                      const std::vector<MetricsRecord> &records,
                      const std::vector<std::string> &curves);

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_METRICS_H
