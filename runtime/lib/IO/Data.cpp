//===- Data.cpp - Training data for the engine ------------------*- C++ -*-===//
//
// Where the samples gpipe_rt_load_input / gpipe_rt_load_labels copy come
// from. A safetensors file holds `input` [N, ...] and `labels` [N, ...]:
// both are checked against the model (the name, the dims after dim 0, the
// dtype family: any float type for f32, any integer type for i64), converted
// to the model's dtype once, and every label (and token id, when the model
// has a vocabulary) is range-checked before training starts, so a bad file
// fails with its position instead of a kernel error deep in a step. A model
// with several inputs (input_ids, attention_mask, ...: TensorSpec::parts)
// reads each from the tensor of its name, [N, ...] with the part's dims, and
// packs them sample by sample into the rows the model loads; a file may also
// hold them already packed as `input` [N, S].
//
// Without a file, the metadata's data_hint picks built-in data generated on
// the fly from the seed: "text-char" (windows of the built-in English text
// at pseudo-random positions, labels the next characters) and
// "classification" (Gaussian features labelled by a fixed random linear
// teacher, which a model can learn) and "images" (images around a random
// template per class).
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/CPUKernels.h"
#include "gpipe/Runtime/Dataset.h"
#include "gpipe/Runtime/ModelMetadata.h"
#include "gpipe/Runtime/SafeTensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace gpipe::rt {
namespace {

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// The shape a file's tensor must have: N followed by the model's dims.
std::string expectedShape(const TensorSpec &spec) {
  std::string s = "[N";
  for (size_t i = 1; i < spec.shape.size(); ++i)
    s += ", " + std::to_string(spec.shape[i]);
  return s + "]";
}

bool isFloat(SafeTensorsDType t) {
  return t == SafeTensorsDType::F32 || t == SafeTensorsDType::F64 ||
         t == SafeTensorsDType::F16 || t == SafeTensorsDType::BF16;
}

bool isInteger(SafeTensorsDType t) {
  switch (t) {
  case SafeTensorsDType::U8:
  case SafeTensorsDType::I8:
  case SafeTensorsDType::U16:
  case SafeTensorsDType::I16:
  case SafeTensorsDType::U32:
  case SafeTensorsDType::I32:
  case SafeTensorsDType::U64:
  case SafeTensorsDType::I64:
    return true;
  default:
    return false;
  }
}

std::string positionString(int64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t dim = shape[d] ? shape[d] : 1;
    index[d] = flat % dim;
    flat /= dim;
  }
  return shapeString(index);
}

uint64_t splitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// The file's tensor names, quoted: 'input', 'labels'.
std::string heldTensors(const SafeTensorsFile &file) {
  std::string held;
  for (const SafeTensorInfo &t : file.tensors())
    held += (held.empty() ? "" : ", ") + ("'" + t.name + "'");
  return held.empty() ? "no tensors" : held;
}

/// A tensor's bytes in the model's dtype: a view into a mapped file that
/// holds them in that dtype already, or a converted copy.
struct TensorBytes {
  std::vector<uint8_t> owned;
  const uint8_t *view = nullptr;
  const uint8_t *data() const { return view ? view : owned.data(); }
};

/// A tensor of the file, converted to the model's dtype (a view of a mapped
/// file's bytes when they are in that dtype), every value checked.
Status readTensor(const SafeTensorsFile &file, const char *name,
                  const TensorSpec &spec, int64_t range, const char *rangeWhat,
                  TensorBytes &out, int64_t &samples) {
  std::vector<uint8_t> &bytes = out.owned;
  std::string family = spec.dtype == GPIPE_RT_F32
                           ? "f32 (F32, F64, F16 or BF16)"
                           : "i64 (any integer type)";
  std::string want = "'" + std::string(name) + "' " + expectedShape(spec) +
                     " " + gpipe_rt_dtype_name(spec.dtype);
  const SafeTensorInfo *info = file.find(name);
  if (!info) {
    // A single input also goes by the model's name for it.
    std::string also = !spec.name.empty() && spec.name != name
                           ? " (or '" + spec.name +
                                 "', the model's name "
                                 "for its input)"
                           : "";
    return Status::error(file.name() + ": no tensor '" + name + "'" + also +
                         "; the model expects " + want + " (the file holds " +
                         heldTensors(file) + ")");
  }
  bool shapeOk = info->shape.size() == spec.shape.size() &&
                 !info->shape.empty() && info->shape[0] >= 1;
  for (size_t i = 1; shapeOk && i < spec.shape.size(); ++i)
    shapeOk = info->shape[i] == spec.shape[i];
  if (!shapeOk)
    return Status::error(file.name() + ": tensor '" + name + "' has shape " +
                         shapeString(info->shape) + ", the model expects " +
                         expectedShape(spec) + " with N >= 1");
  bool dtypeOk = spec.dtype == GPIPE_RT_F32 ? isFloat(info->dtype)
                                            : isInteger(info->dtype);
  if (!dtypeOk)
    return Status::error(file.name() + ": tensor '" + name + "' has dtype " +
                         safeTensorsDTypeName(info->dtype) +
                         ", the model expects " + family);
  samples = info->shape[0];
  int64_t count = info->numElements();
  // In the model's dtype already, in a mapping: checked where it lies, read
  // from the page cache as steps need it (a file larger than memory).
  const bool inPlace =
      file.isMapped() &&
      ((spec.dtype == GPIPE_RT_F32 && info->dtype == SafeTensorsDType::F32) ||
       (spec.dtype == GPIPE_RT_I64 && info->dtype == SafeTensorsDType::I64));
  const uint8_t *raw = file.data(*info);
  if (!inPlace)
    bytes.resize(size_t(count) * gpipe_rt_dtype_size(spec.dtype));
  if (spec.dtype == GPIPE_RT_F32) {
    std::vector<float> values;
    if (!inPlace)
      if (Status s = file.readF32(name, values); !s.ok())
        return s;
    auto valueAt = [&](int64_t i) {
      if (!inPlace)
        return values[size_t(i)];
      float v;
      std::memcpy(&v, raw + i * 4, 4);
      return v;
    };
    // A NaN or infinity in the data would surface mid-step as a non-finite
    // activation of some rank; name the file and the sample instead.
    for (int64_t i = 0; i < count; ++i) {
      float v = valueAt(i);
      if (std::isfinite(v))
        continue;
      int64_t perSample = samples ? count / samples : 1;
      return Status::error(
          file.name() + ": tensor '" + name + "': " +
          (std::isnan(v) ? "nan"
           : v > 0       ? "inf"
                         : "-inf") +
          " at position " + positionString(i, info->shape) + " (sample " +
          std::to_string(perSample ? i / perSample : 0) +
          "); training data must be finite: fix or drop that sample");
    }
    if (inPlace)
      out.view = raw;
    else if (count)
      std::memcpy(bytes.data(), values.data(), bytes.size());
    return Status::success();
  }
  std::vector<int64_t> values;
  if (!inPlace)
    if (Status s = file.readI64(name, values); !s.ok())
      return s;
  auto valueAt = [&](int64_t i) {
    if (!inPlace)
      return values[size_t(i)];
    int64_t v;
    std::memcpy(&v, raw + i * 8, 8);
    return v;
  };
  if (range > 0)
    for (int64_t i = 0; i < count; ++i)
      if (int64_t v = valueAt(i); v < 0 || v >= range)
        return Status::error(file.name() + ": tensor '" + name +
                             "': " + rangeWhat + " " + std::to_string(v) +
                             " at position " + positionString(i, info->shape) +
                             " is outside [0, " + std::to_string(range) + ")");
  if (inPlace)
    out.view = raw;
  else if (count)
    std::memcpy(bytes.data(), values.data(), bytes.size());
  return Status::success();
}

/// The model's several inputs (`input.parts`) packed into `packed`, one row
/// of input.sampleBytes() per sample: read by their names, or, when the file
/// lacks one of them but holds `input` [N, S], already packed from it.
/// `first` receives the name of the tensor read first (for messages) and
/// `what` how the rows were made (for Dataset::describe).
Status readInputParts(const SafeTensorsFile &file, const TensorSpec &input,
                      TensorBytes &out, int64_t &samples, std::string &first,
                      std::string &what) {
  std::vector<uint8_t> &packed = out.owned;
  // Token ids are not range-checked here: the vocabulary belongs to one of
  // the parts (input_ids) and the metadata does not say which, so an id out
  // of range is reported by the gather kernel when the step runs.
  const std::vector<InputPart> &parts = input.parts;
  std::string names;
  for (const InputPart &part : parts)
    names += (names.empty() ? "" : ", ") + part.name;
  const char *dtype = gpipe_rt_dtype_name(input.dtype);
  auto missing =
      std::find_if(parts.begin(), parts.end(), [&](const InputPart &part) {
        return !file.find(part.name);
      });
  if (missing != parts.end()) {
    const SafeTensorInfo *whole = file.find("input");
    if (whole && whole->shape.size() == 2 &&
        whole->shape[1] == input.shape[1]) {
      first = "input";
      what = names + " packed as 'input'";
      return readTensor(file, "input", input, 0, "", out, samples);
    }
    TensorSpec spec{missing->shape, input.dtype};
    std::string message = file.name() + ": no tensor '" + missing->name +
                          "' (the model's input '" + missing->name + "', " +
                          expectedShape(spec) + " " + dtype + "; it reads " +
                          names + " by name, or all " +
                          std::to_string(parts.size()) + " packed as 'input' " +
                          expectedShape(input) + " " + dtype +
                          "); the file holds " + heldTensors(file);
    if (whole)
      message += "; its 'input' " + shapeString(whole->shape) +
                 " is not the packed " + expectedShape(input);
    return Status::error(message);
  }
  first = parts.front().name;
  what = names;
  const size_t elementBytes = gpipe_rt_dtype_size(input.dtype);
  const size_t rowBytes = size_t(input.sampleBytes());
  for (const InputPart &part : parts) {
    TensorSpec spec{part.shape, input.dtype};
    TensorBytes bytes;
    int64_t n = 0;
    if (Status s = readTensor(file, part.name.c_str(), spec, 0, "", bytes, n);
        !s.ok())
      return s;
    if (&part == &parts.front()) {
      samples = n;
      packed.assign(size_t(samples) * rowBytes, 0);
    } else if (n != samples) {
      return Status::error(file.name() + ": tensor '" + part.name + "' has " +
                           std::to_string(n) + " samples but '" + first +
                           "' has " + std::to_string(samples) +
                           " (every input needs one row per sample)");
    }
    const size_t partBytes = size_t(spec.sampleBytes());
    const size_t offset = size_t(part.offset) * elementBytes;
    for (int64_t i = 0; i < samples && partBytes; ++i)
      std::memcpy(packed.data() + size_t(i) * rowBytes + offset,
                  bytes.data() + size_t(i) * partBytes, partBytes);
  }
  return Status::success();
}

class FileDataset : public Dataset {
public:
  std::string name;
  /// The tensors the input rows came from, when the model has several
  /// inputs.
  std::string inputs;
  int64_t samples = 0;
  int64_t inputSampleBytes = 0, labelSampleBytes = 0;
  TensorBytes input, labels;
  /// The file's bytes, when input or labels are views of them.
  std::shared_ptr<const SafeTensorsFile::Storage> storage;

  std::string describe() const override {
    return name + " (" + std::to_string(samples) + " samples" +
           (inputs.empty() ? "" : " of " + inputs) +
           (storage ? ", read in place from a memory mapping" : "") + ")";
  }
  int64_t numSamples() const override { return samples; }
  void copyInput(int64_t sample, uint8_t *out) const override {
    std::memcpy(out, input.data() + sample * inputSampleBytes,
                size_t(inputSampleBytes));
  }
  void copyLabels(int64_t sample, uint8_t *out) const override {
    std::memcpy(out, labels.data() + sample * labelSampleBytes,
                size_t(labelSampleBytes));
  }
};

/// Effectively endless generated data.
constexpr int64_t kGeneratedSamples = int64_t(1) << 62;
/// Where the text's evaluation windows are drawn from: sample indices
/// training (at most kGeneratedSamples / 2 of them) never reaches.
constexpr uint64_t kEvaluationFirst = uint64_t(1) << 61;

class TextDataset : public Dataset {
public:
  uint64_t seed = 0;
  int64_t length = 0;
  std::vector<int64_t> ids;
  /// An evaluation split: this many windows, drawn from sample indices
  /// training never reaches (0: training's endless draw).
  int64_t evaluation = 0;

  std::string describe() const override {
    return "built-in text (" + std::to_string(ids.size()) + " characters, " +
           (evaluation ? std::to_string(evaluation) + " windows" : "windows") +
           " of " + std::to_string(length) +
           (evaluation ? ", drawn apart from training's" : "") + ")";
  }
  int64_t numSamples() const override {
    return evaluation ? evaluation : kGeneratedSamples;
  }
  bool isEndless() const override { return evaluation == 0; }
  int64_t position(int64_t sample) const {
    uint64_t span = uint64_t(ids.size()) - uint64_t(length);
    uint64_t index = uint64_t(sample) + (evaluation ? kEvaluationFirst : 0);
    return int64_t(splitMix(seed ^ splitMix(index)) % span);
  }
  void copyInput(int64_t sample, uint8_t *out) const override {
    std::memcpy(out, ids.data() + position(sample), size_t(length) * 8);
  }
  void copyLabels(int64_t sample, uint8_t *out) const override {
    std::memcpy(out, ids.data() + position(sample) + 1, size_t(length) * 8);
  }
};

/// Gaussian features labelled by a random linear teacher (argmax). A pool
/// of samples is drawn once, up front, so that loading a micro-batch during
/// a step is a copy (generation would otherwise count as compute time).
class ClassificationDataset : public Dataset {
public:
  uint64_t seed = 0;
  int64_t features = 0, classes = 0, pool = 0;
  /// The index of the first sample drawn: the evaluation split's start
  /// after training's pool (0 for training).
  int64_t first = 0;
  std::vector<float> teacher;  // [classes, features]
  std::vector<float> inputs;   // [pool, features]
  std::vector<int64_t> labels; // [pool]

  std::string describe() const override {
    return "built-in classification (" + std::to_string(pool) + " samples of " +
           std::to_string(features) + " Gaussian features, " +
           std::to_string(classes) + " classes from a random linear teacher" +
           (first ? ", held out from training's" : "") + ")";
  }
  int64_t numSamples() const override { return pool; }

  void generate() {
    inputs.resize(size_t(pool * features));
    labels.resize(size_t(pool));
    for (int64_t n = 0; n < pool; ++n) {
      float *x = inputs.data() + n * features;
      (void)gpipe_rt_cpu_fill_init_f32(GPIPE_RT_INIT_NORMAL, x, features, 1.0,
                                       seed, splitMix(uint64_t(first + n) + 1));
      int64_t best = 0;
      double bestScore = -INFINITY;
      for (int64_t c = 0; c < classes; ++c) {
        double score = 0;
        const float *w = teacher.data() + c * features;
        for (int64_t i = 0; i < features; ++i)
          score += double(w[i]) * double(x[i]);
        if (score > bestScore) {
          bestScore = score;
          best = c;
        }
      }
      labels[size_t(n)] = best;
    }
  }
  void copyInput(int64_t sample, uint8_t *out) const override {
    std::memcpy(out, inputs.data() + (sample % pool) * features,
                size_t(features) * 4);
  }
  void copyLabels(int64_t sample, uint8_t *out) const override {
    std::memcpy(out, &labels[size_t(sample % pool)], 8);
  }
};

/// Images [C, H, W] around one random template per class: the template has
/// a per-channel level (standard normal) plus a pixel pattern (standard
/// deviation 0.5), a sample is its class's template plus standard normal
/// noise, and labels are drawn uniformly. Channel means already tell the
/// classes apart, so a small CNN learns them within a few hundred steps.
class ImageDataset : public Dataset {
public:
  uint64_t seed = 0;
  int64_t features = 0, channels = 0, classes = 0, pool = 0;
  /// As ClassificationDataset's.
  int64_t first = 0;
  std::vector<float> templates; // [classes, features]
  std::vector<float> inputs;    // [pool, features]
  std::vector<int64_t> labels;  // [pool]

  std::string describe() const override {
    return "built-in images (" + std::to_string(pool) + " samples, " +
           std::to_string(classes) +
           " classes, each a random template plus Gaussian noise" +
           (first ? ", held out from training's" : "") + ")";
  }
  int64_t numSamples() const override { return pool; }

  void generate() {
    templates.resize(size_t(classes * features));
    int64_t pixels = features / channels;
    std::vector<float> level(size_t(classes * channels));
    (void)gpipe_rt_cpu_fill_init_f32(GPIPE_RT_INIT_NORMAL, level.data(),
                                     int64_t(level.size()), 1.0, seed,
                                     splitMix(0x1ea7));
    (void)gpipe_rt_cpu_fill_init_f32(GPIPE_RT_INIT_NORMAL, templates.data(),
                                     int64_t(templates.size()), 0.5, seed,
                                     splitMix(0x7e3a));
    for (int64_t c = 0; c < classes; ++c)
      for (int64_t ch = 0; ch < channels; ++ch)
        for (int64_t p = 0; p < pixels; ++p)
          templates[size_t((c * channels + ch) * pixels + p)] +=
              level[size_t(c * channels + ch)];
    inputs.resize(size_t(pool * features));
    labels.resize(size_t(pool));
    for (int64_t n = 0; n < pool; ++n) {
      uint64_t index = uint64_t(first + n);
      int64_t label =
          int64_t(splitMix(seed ^ splitMix(index + 77)) % uint64_t(classes));
      labels[size_t(n)] = label;
      float *x = inputs.data() + n * features;
      (void)gpipe_rt_cpu_fill_init_f32(GPIPE_RT_INIT_NORMAL, x, features, 1.0,
                                       seed, splitMix(index + 1));
      const float *t = templates.data() + label * features;
      for (int64_t i = 0; i < features; ++i)
        x[i] += t[i];
    }
  }
  void copyInput(int64_t sample, uint8_t *out) const override {
    std::memcpy(out, inputs.data() + (sample % pool) * features,
                size_t(features) * 4);
  }
  void copyLabels(int64_t sample, uint8_t *out) const override {
    std::memcpy(out, &labels[size_t(sample % pool)], 8);
  }
};

/// Samples drawn up front for built-in data: enough distinct samples for
/// several mini-batches, at most ~64 MiB of features.
int64_t generatedPoolSize(const ModelMetadata &metadata, int64_t features) {
  int64_t batch = std::max<int64_t>(1, metadata.batchSize());
  int64_t cap = std::max<int64_t>(
      batch, (int64_t(64) << 20) / (4 * std::max<int64_t>(1, features)));
  return std::min(std::max<int64_t>(4 * batch, 256), cap);
}

} // namespace

Dataset::~Dataset() = default;

Status datasetFromSafeTensors(const SafeTensorsFile &file,
                              const ModelMetadata &metadata,
                              std::unique_ptr<Dataset> &dataset) {
  auto data = std::make_unique<FileDataset>();
  data->name = file.name();
  int64_t inputSamples = 0;
  std::string inputName = "input";
  // A single input is 'input', or the model's own name for it.
  if (metadata.input.parts.empty() && !metadata.input.name.empty() &&
      !file.find("input") && file.find(metadata.input.name))
    inputName = metadata.input.name;
  Status s =
      metadata.input.parts.empty()
          ? readTensor(file, inputName.c_str(), metadata.input,
                       metadata.input.dtype == GPIPE_RT_I64 ? metadata.vocab
                                                            : 0,
                       "token id", data->input, inputSamples)
          : readInputParts(file, metadata.input, data->input, inputSamples,
                           inputName, data->inputs);
  if (!s.ok())
    return s;
  // Fewer samples than one mini-batch would repeat samples within every
  // batch (the loader wraps around), silently.
  int64_t batch = metadata.batchSize();
  // Inference pads a partial last mini-batch instead (RunOptions::predict).
  if (inputSamples < batch && !metadata.inference)
    return Status::error(file.name() + ": " + std::to_string(inputSamples) +
                         " sample" + (inputSamples == 1 ? "" : "s") +
                         ", fewer than one mini-batch of " +
                         std::to_string(batch) +
                         " (every batch would repeat samples); give "
                         "at least " +
                         std::to_string(batch) + " samples");
  data->samples = inputSamples;
  data->inputSampleBytes = metadata.input.sampleBytes();
  if (metadata.labels) {
    int64_t labelSamples = 0;
    s = readTensor(
        file, "labels", *metadata.labels,
        metadata.labels->dtype == GPIPE_RT_I64 ? metadata.labels->classes : 0,
        "label", data->labels, labelSamples);
    if (!s.ok())
      return s;
    if (labelSamples != inputSamples)
      return Status::error(file.name() + ": tensor 'labels' has " +
                           std::to_string(labelSamples) + " samples but '" +
                           inputName + "' has " + std::to_string(inputSamples));
    data->labelSampleBytes = metadata.labels->sampleBytes();
  }
  if (data->input.view || data->labels.view)
    data->storage = file.getStorage();
  dataset = std::move(data);
  return Status::success();
}

Status loadDataset(const std::string &path, const ModelMetadata &metadata,
                   std::unique_ptr<Dataset> &dataset) {
  SafeTensorsFile file;
  Status s = SafeTensorsFile::read(path, file);
  if (!s.ok())
    return s;
  return datasetFromSafeTensors(file, metadata, dataset);
}

Status makeBuiltinDataset(const ModelMetadata &metadata, uint64_t seed,
                          std::unique_ptr<Dataset> &dataset,
                          int64_t evaluation) {
  const TensorSpec &in = metadata.input;
  const std::string &hint = metadata.dataHint;
  std::string noData = "this model has no built-in data";
  if (!in.parts.empty()) {
    std::string inputs;
    for (const InputPart &part : in.parts)
      inputs += (inputs.empty() ? "'" : ", '") + part.name + "' " +
                expectedShape(TensorSpec{part.shape, in.dtype});
    return Status::error(
        "this model takes " + std::to_string(in.parts.size()) + " inputs (" +
        inputs + ", " + gpipe_rt_dtype_name(in.dtype) +
        ") and has no built-in data for them; pass --data FILE.safetensors "
        "holding each by its name" +
        (metadata.labels ? " and 'labels' " + expectedShape(*metadata.labels) +
                               " " + gpipe_rt_dtype_name(metadata.labels->dtype)
                         : std::string()));
  }
  if (hint == "text-char") {
    const int64_t alphabet = int64_t(textAlphabet().size());
    if (in.dtype != GPIPE_RT_I64 || in.shape.size() != 2)
      return Status::error("built-in text data needs token ids of shape "
                           "[B, T], the model's input is " +
                           shapeString(in.shape) + " " +
                           gpipe_rt_dtype_name(in.dtype) +
                           "; pass --data FILE.safetensors");
    if (metadata.vocab < alphabet)
      return Status::error(
          "built-in text data has " + std::to_string(alphabet) +
          " symbols but the model's vocabulary has " +
          std::to_string(metadata.vocab) +
          "; compile it with a vocabulary of at least " +
          std::to_string(alphabet) + " or pass --data FILE.safetensors");
    if (!metadata.labels || metadata.labels->dtype != GPIPE_RT_I64 ||
        metadata.labels->shape != in.shape ||
        metadata.labels->classes < alphabet)
      return Status::error("built-in text data needs i64 labels shaped like "
                           "the input with at least " +
                           std::to_string(alphabet) +
                           " classes; pass --data FILE.safetensors");
    auto data = std::make_unique<TextDataset>();
    data->seed = seed;
    data->length = in.shape[1];
    data->evaluation = evaluation;
    for (char c : defaultText())
      data->ids.push_back(textCharId(c));
    if (int64_t(data->ids.size()) <= data->length)
      return Status::error(
          "the built-in text has " + std::to_string(data->ids.size()) +
          " characters, too few for sequences of " +
          std::to_string(data->length) + "; pass --data FILE.safetensors");
    dataset = std::move(data);
    return Status::success();
  }
  if (hint == "classification") {
    if (in.dtype != GPIPE_RT_F32)
      return Status::error("built-in classification data needs f32 input, "
                           "the model's is " +
                           std::string(gpipe_rt_dtype_name(in.dtype)) +
                           "; pass --data FILE.safetensors");
    if (!metadata.labels || metadata.labels->dtype != GPIPE_RT_I64 ||
        metadata.labels->shape.size() != 1 || metadata.labels->classes < 1)
      return Status::error("built-in classification data needs i64 labels "
                           "of shape [B]; pass --data FILE.safetensors");
    auto data = std::make_unique<ClassificationDataset>();
    data->seed = seed;
    data->features = in.sampleElements();
    data->classes = metadata.labels->classes;
    data->teacher.resize(size_t(data->classes * data->features));
    double scale =
        1.0 / std::sqrt(double(std::max<int64_t>(1, data->features)));
    const char teacherName[] = "classification-teacher";
    (void)gpipe_rt_cpu_fill_init_f32(
        GPIPE_RT_INIT_NORMAL, data->teacher.data(),
        int64_t(data->teacher.size()), scale, seed,
        gpipe_rt_hash_name(teacherName, sizeof(teacherName) - 1));
    data->pool = generatedPoolSize(metadata, data->features);
    if (evaluation) {
      data->first = data->pool;
      data->pool = evaluation;
    }
    data->generate();
    dataset = std::move(data);
    return Status::success();
  }
  if (hint == "images") {
    if (in.dtype != GPIPE_RT_F32 || in.shape.size() != 4 || !metadata.labels ||
        metadata.labels->dtype != GPIPE_RT_I64 ||
        metadata.labels->shape.size() != 1 || metadata.labels->classes < 1)
      return Status::error("built-in images need f32 input [B, C, H, W] and "
                           "i64 labels [B]; pass --data FILE.safetensors");
    auto data = std::make_unique<ImageDataset>();
    data->seed = seed;
    data->features = in.sampleElements();
    data->channels = in.shape[1];
    data->classes = metadata.labels->classes;
    data->pool = generatedPoolSize(metadata, data->features);
    if (evaluation) {
      data->first = data->pool;
      data->pool = evaluation;
    }
    data->generate();
    dataset = std::move(data);
    return Status::success();
  }
  return Status::error(
      noData +
      (hint.empty() ? std::string(" (its data_hint is empty)")
                    : " for data_hint '" + hint + "'") +
      "; pass --data FILE.safetensors holding 'input' " + expectedShape(in) +
      " " + gpipe_rt_dtype_name(in.dtype) +
      (metadata.labels ? " and 'labels' " + expectedShape(*metadata.labels) +
                             " " + gpipe_rt_dtype_name(metadata.labels->dtype)
                       : std::string()));
}

void getEpochOrder(int64_t n, bool shuffle, uint64_t seed, int64_t epoch,
                   std::vector<int64_t> &order) {
  order.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i)
    order[size_t(i)] = i;
  if (!shuffle)
    return;
  // Fisher-Yates (Knuth, TAOCP vol. 2, Algorithm P) with draws
  // splitMix64(key + i), each mapped to [0, i] by multiply-and-shift
  // (Lemire, "Fast Random Integer Generation in an Interval", 2019, without
  // its rejection step: a bias below (i + 1) / 2^64).
  const uint64_t key = abi::splitMix64(
      seed ^ abi::splitMix64(uint64_t(epoch) ^ 0x53485546464C45ull));
  for (int64_t i = n - 1; i > 0; --i) {
    uint64_t draw = abi::splitMix64(key + uint64_t(i));
    auto j =
        int64_t((static_cast<unsigned __int128>(draw) * uint64_t(i + 1)) >> 64);
    std::swap(order[size_t(i)], order[size_t(j)]);
  }
}

} // namespace gpipe::rt
