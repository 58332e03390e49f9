//===- InputPartsTest.cpp - Models with several named inputs ----*- C++ -*-===//
//
// A model exported with several inputs (input_ids, attention_mask, ...)
// takes them packed into one input [B, S] whose layout the metadata's
// input.parts describe. Checks parsing and validating the parts, reading
// each from the data file by its name and packing them sample by sample (or
// taking them already packed as `input`), the errors for a missing or
// mis-shaped input, the refusal of built-in data, and a prediction over the
// packed rows through a hand-written one-rank inference model.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/Dataset.h"
#include "gpipe/Runtime/Engine.h"
#include "gpipe/Runtime/SafeTensors.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <vector>

using namespace gpipe::rt;
using Json = nlohmann::json;

namespace {

// The model: B = 4 samples in M = 2 micro-batches of input_ids [4, 3],
// attention_mask [4, 3] and token_type_ids [4, 1, 2], packed as [4, 8] i64.
constexpr int64_t kBatch = 4, kRow = 8, kRowBytes = kRow * 8;
constexpr int64_t kMicroBytes = 2 * kRowBytes;

Json part(const char *name, std::vector<int64_t> shape, int64_t offset) {
  return {{"name", name}, {"shape", shape}, {"offset", offset}};
}

Json threeParts() {
  return {part("input_ids", {4, 3}, 0), part("attention_mask", {4, 3}, 3),
          part("token_type_ids", {4, 1, 2}, 6)};
}

/// One rank, one stage, inference: each forward loads its micro-batch of
/// the packed input and reports it as the output.
int32_t echoRank(gpipe_rt_rank *rank, uint8_t *arena) {
  uint8_t *x = arena + 64;
  for (int m = 0; m < 2; ++m) {
    if (gpipe_rt_action_begin(rank, m) ||
        gpipe_rt_load_input(rank, m, x, kMicroBytes) ||
        gpipe_rt_report_output(rank, m, x, kMicroBytes))
      return 1;
    gpipe_rt_action_end(rank, m);
  }
  return 0;
}

Json echoMetadata() {
  Json forward0 = {{"kind", "forward"}, {"stage", 0}, {"mb", 0}};
  Json forward1 = {{"kind", "forward"}, {"stage", 0}, {"mb", 1}};
  Json stage = {{"stage", 0},         {"params_offset", 0},
                {"grads_offset", -1}, {"state_offset", -1},
                {"param_bytes", 0},   {"params", Json::array()}};
  Json rank = {{"rank", 0},
               {"symbol", "echo_rank_0"},
               {"arena_bytes", 64 + kMicroBytes},
               {"peak_bytes", 64 + kMicroBytes},
               {"stages", Json::array({stage})},
               {"actions", Json::array({forward0, forward1})}};
  Json info = {{"index", 0}, {"rank", 0}, {"name", "s0"}, {"layers", {"e"}}};
  return {
      {"format", "gpipe-model"},
      {"abi_version", GPIPE_RT_ABI_VERSION},
      {"producer", "hand-written"},
      {"source", "bert.onnx"},
      {"mode", "inference"},
      {"stages", 1},
      {"microbatches", 2},
      {"schedule", "gpipe"},
      {"remat", "none"},
      {"loss", ""},
      {"alignment", 64},
      {"optimizer", "sgd"},
      {"input",
       {{"shape", {kBatch, kRow}}, {"dtype", "i64"}, {"parts", threeParts()}}},
      {"output", {{"shape", {kBatch, kRow}}, {"dtype", "i64"}}},
      {"labels", nullptr},
      {"vocab", 10},
      {"data_hint", ""},
      {"parameters", Json::array()},
      {"stage_info", Json::array({info})},
      {"ranks", Json::array({rank})},
      {"sites", Json::array()}};
}

Status makeImage(const Json &metadata, ModelImage &image) {
  return ModelImage::fromParts(metadata.dump(), nullptr, 0, {echoRank}, image);
}

std::string metadataError(const Json &metadata) {
  ModelImage image;
  return makeImage(metadata, image).message();
}

/// The same model's metadata as a training model would have it.
ModelMetadata trainingMetadata() {
  ModelMetadata m;
  m.microbatches = 2;
  m.vocab = 10;
  m.dataHint = "text-char";
  m.input.shape = {kBatch, kRow};
  m.input.dtype = GPIPE_RT_I64;
  m.input.parts = {{"input_ids", {4, 3}, 0},
                   {"attention_mask", {4, 3}, 3},
                   {"token_type_ids", {4, 1, 2}, 6}};
  m.labels = TensorSpec{{kBatch}, GPIPE_RT_I64, 3};
  return m;
}

/// N samples of each input: token ids 1000 + 10 n + k (beyond the
/// vocabulary: packed inputs are not range-checked), a mask stored as I32,
/// type ids n + j; and the rows they pack into.
struct Samples {
  explicit Samples(int64_t n) : n(n) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < 3; ++k) {
        ids.push_back(1000 + 10 * i + k);
        mask.push_back(k <= i % 3 ? 1 : 0);
      }
      for (int64_t j = 0; j < 2; ++j)
        types.push_back(i + j);
      labels.push_back(i % 3);
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < 3; ++k)
        packed.push_back(ids[size_t(3 * i + k)]);
      for (int64_t k = 0; k < 3; ++k)
        packed.push_back(mask[size_t(3 * i + k)]);
      for (int64_t j = 0; j < 2; ++j)
        packed.push_back(types[size_t(2 * i + j)]);
    }
  }
  SafeTensorRef idsRef() const {
    return {
        "input_ids", SafeTensorsDType::I64, {n, 3}, ids.data(), ids.size() * 8};
  }
  SafeTensorRef maskRef() const {
    return {"attention_mask",
            SafeTensorsDType::I32,
            {n, 3},
            mask.data(),
            mask.size() * 4};
  }
  SafeTensorRef typesRef() const {
    return {"token_type_ids",
            SafeTensorsDType::I64,
            {n, 1, 2},
            types.data(),
            types.size() * 8};
  }
  SafeTensorRef labelsRef() const {
    return {
        "labels", SafeTensorsDType::I64, {n}, labels.data(), labels.size() * 8};
  }
  SafeTensorRef packedRef() const {
    return {"input",
            SafeTensorsDType::I64,
            {n, kRow},
            packed.data(),
            packed.size() * 8};
  }

  int64_t n;
  std::vector<int64_t> ids, types, labels, packed;
  std::vector<int32_t> mask;
};

Status readData(const std::vector<SafeTensorRef> &tensors,
                const ModelMetadata &metadata, std::unique_ptr<Dataset> &data) {
  std::vector<uint8_t> bytes;
  Status s = serializeSafeTensors(tensors, {}, bytes);
  EXPECT_TRUE(s.ok()) << s.message();
  SafeTensorsFile file;
  s = SafeTensorsFile::parse(std::move(bytes), "data.safetensors", file);
  EXPECT_TRUE(s.ok()) << s.message();
  return datasetFromSafeTensors(file, metadata, data);
}

std::string dataError(const std::vector<SafeTensorRef> &tensors,
                      const ModelMetadata &metadata = trainingMetadata()) {
  std::unique_ptr<Dataset> data;
  return readData(tensors, metadata, data).message();
}

/// Every sample's input row as the dataset writes it.
std::vector<int64_t> rows(const Dataset &data) {
  std::vector<int64_t> out(size_t(data.numSamples() * kRow));
  for (int64_t i = 0; i < data.numSamples(); ++i)
    data.copyInput(i, reinterpret_cast<uint8_t *>(out.data() + i * kRow));
  return out;
}

//===----------------------------------------------------------------------===//
// Metadata
//===----------------------------------------------------------------------===//

TEST(InputParts, Parse) {
  ModelImage image;
  Status s = makeImage(echoMetadata(), image);
  ASSERT_TRUE(s.ok()) << s.message();
  const TensorSpec &input = image.metadata().input;
  EXPECT_EQ(input.shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(input.dtype, GPIPE_RT_I64);
  ASSERT_EQ(input.parts.size(), 3u);
  EXPECT_EQ(input.parts[0].name, "input_ids");
  EXPECT_EQ(input.parts[0].shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(input.parts[0].offset, 0);
  EXPECT_EQ(input.parts[1].name, "attention_mask");
  EXPECT_EQ(input.parts[1].offset, 3);
  EXPECT_EQ(input.parts[2].name, "token_type_ids");
  EXPECT_EQ(input.parts[2].shape, (std::vector<int64_t>{4, 1, 2}));
  EXPECT_EQ(input.parts[2].offset, 6);
  EXPECT_EQ(input.parts[2].sampleElements(), 2);

  // Absent or null: a single input.
  Json m = echoMetadata();
  m["input"].erase("parts");
  ASSERT_TRUE(makeImage(m, image).ok());
  EXPECT_TRUE(image.metadata().input.parts.empty());
  m["input"]["parts"] = nullptr;
  ASSERT_TRUE(makeImage(m, image).ok());
  EXPECT_TRUE(image.metadata().input.parts.empty());
}

TEST(InputParts, MetadataErrors) {
  Json m = echoMetadata();
  m["input"]["parts"] = "input_ids";
  EXPECT_EQ(metadataError(m),
            "metadata: input.parts: expected an array, got a string");

  m = echoMetadata();
  m["input"]["parts"] = Json::array();
  EXPECT_EQ(metadataError(m), "metadata: input.parts: is empty (omit it for "
                              "a single input)");

  m = echoMetadata();
  m["input"]["shape"] = {4, 2, 4};
  EXPECT_EQ(metadataError(m), "metadata: input.shape: is [4, 2, 4]; an input "
                              "with parts is packed as [B, S]");

  m = echoMetadata();
  m["input"]["parts"][1]["name"] = "";
  EXPECT_EQ(metadataError(m), "metadata: input.parts[1].name: is empty");

  m = echoMetadata();
  m["input"]["parts"][2]["name"] = "input_ids";
  EXPECT_EQ(metadataError(m), "metadata: input.parts[2].name: 'input_ids' "
                              "appears twice in 'input.parts'");

  m = echoMetadata();
  m["input"]["parts"][1].erase("offset");
  EXPECT_EQ(metadataError(m), "metadata: input.parts[1]: missing 'offset'");

  m = echoMetadata();
  m["input"]["parts"][1]["shape"] = {8, 3};
  EXPECT_EQ(metadataError(m), "metadata: input.parts[1].shape: batch 8 "
                              "differs from the input's 4");

  m = echoMetadata();
  m["input"]["parts"][1]["shape"] = Json::array();
  EXPECT_EQ(metadataError(m), "metadata: input.parts[1].shape: must have at "
                              "least one dimension (the batch)");

  m = echoMetadata();
  m["input"]["parts"][1]["offset"] = 4;
  EXPECT_EQ(metadataError(m), "metadata: input.parts[1].offset: is 4, "
                              "expected 3 (the parts tile a sample in order)");

  m = echoMetadata();
  m["input"]["parts"][2]["shape"] = {4, 1, 3};
  EXPECT_EQ(metadataError(m), "metadata: input.parts[2]: 'token_type_ids' "
                              "ends at element 9, beyond the input's 8 per "
                              "sample");

  m = echoMetadata();
  m["input"]["parts"][0]["shape"] = {4, 3, 3};
  EXPECT_EQ(metadataError(m), "metadata: input.parts[0].shape: [4, 3, 3] "
                              "holds more elements per sample than the "
                              "input's 8");

  m = echoMetadata();
  m["input"]["parts"][2]["shape"] = {4, 1, 1};
  EXPECT_EQ(metadataError(m), "metadata: input.parts: the parts hold 7 "
                              "elements per sample, the input [4, 8] has 8");

  m = echoMetadata();
  m["input"]["parts"][0]["shape"] = {4, int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_NE(metadataError(m).find("holds more elements per sample"),
            std::string::npos);
}

TEST(InputParts, PartCalledLabelsIsRefusedWithLabels) {
  // A training model reads 'labels' beside its inputs.
  Json m = echoMetadata();
  m["mode"] = "train";
  m["labels"] = {{"shape", {4}}, {"dtype", "i64"}, {"classes", 3}};
  m["input"]["parts"][1]["name"] = "labels";
  EXPECT_EQ(metadataError(m), "metadata: input.parts[1].name: 'labels' is the "
                              "data's labels tensor; an input cannot be "
                              "called so");
}

//===----------------------------------------------------------------------===//
// Data
//===----------------------------------------------------------------------===//

TEST(InputParts, PackedFromNamedTensors) {
  Samples x(5);
  std::unique_ptr<Dataset> data;
  // In any order in the file, beside tensors the model does not read.
  std::vector<int64_t> extra{7};
  Status s = readData({x.labelsRef(),
                       x.typesRef(),
                       x.maskRef(),
                       {"extra", SafeTensorsDType::I64, {1}, extra.data(), 8},
                       x.idsRef()},
                      trainingMetadata(), data);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(data->numSamples(), 5);
  EXPECT_EQ(data->describe(), "data.safetensors (5 samples of input_ids, "
                              "attention_mask, token_type_ids)");
  std::vector<int64_t> packed = rows(*data);
  EXPECT_EQ(packed, x.packed);
  // Sample 1's row, spelled out.
  EXPECT_EQ(
      std::vector<int64_t>(packed.begin() + kRow, packed.begin() + 2 * kRow),
      (std::vector<int64_t>{1010, 1011, 1012, 1, 1, 0, 1, 2}));
  for (int64_t i = 0; i < 5; ++i) {
    int64_t label;
    data->copyLabels(i, reinterpret_cast<uint8_t *>(&label));
    EXPECT_EQ(label, i % 3);
  }
}

TEST(InputParts, PrePackedInputIsAccepted) {
  Samples x(6);
  std::unique_ptr<Dataset> data;
  Status s = readData({x.packedRef(), x.labelsRef()}, trainingMetadata(), data);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(data->numSamples(), 6);
  EXPECT_EQ(data->describe(),
            "data.safetensors (6 samples of input_ids, attention_mask, "
            "token_type_ids packed as 'input')");
  EXPECT_EQ(rows(*data), x.packed);

  // The named tensors win when the file holds them all.
  std::vector<int64_t> zeros(6 * kRow, 0);
  s = readData({x.idsRef(),
                x.maskRef(),
                x.typesRef(),
                x.labelsRef(),
                {"input",
                 SafeTensorsDType::I64,
                 {6, kRow},
                 zeros.data(),
                 zeros.size() * 8}},
               trainingMetadata(), data);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(rows(*data), x.packed);
}

TEST(InputParts, MissingInputIsNamed) {
  Samples x(5);
  EXPECT_EQ(dataError({x.idsRef(), x.typesRef(), x.labelsRef()}),
            "data.safetensors: no tensor 'attention_mask' (the model's input "
            "'attention_mask', [N, 3] i64; it reads input_ids, "
            "attention_mask, token_type_ids by name, or all 3 packed as "
            "'input' [N, 8] i64); the file holds 'input_ids', 'labels', "
            "'token_type_ids'");
  // An `input` that is not the packed layout is no substitute.
  std::vector<int64_t> wrong(5 * 4, 0);
  EXPECT_EQ(dataError({x.idsRef(),
                       x.typesRef(),
                       x.labelsRef(),
                       {"input",
                        SafeTensorsDType::I64,
                        {5, 4},
                        wrong.data(),
                        wrong.size() * 8}}),
            "data.safetensors: no tensor 'attention_mask' (the model's input "
            "'attention_mask', [N, 3] i64; it reads input_ids, "
            "attention_mask, token_type_ids by name, or all 3 packed as "
            "'input' [N, 8] i64); the file holds 'input', 'input_ids', "
            "'labels', 'token_type_ids'; its 'input' [5, 4] is not the "
            "packed [N, 8]");
}

TEST(InputParts, MisshapedInputsAreErrors) {
  Samples x(5);
  std::vector<int64_t> flat(5 * 2, 0);
  EXPECT_EQ(dataError({x.idsRef(),
                       x.maskRef(),
                       x.labelsRef(),
                       {"token_type_ids",
                        SafeTensorsDType::I64,
                        {5, 2},
                        flat.data(),
                        flat.size() * 8}}),
            "data.safetensors: tensor 'token_type_ids' has shape [5, 2], the "
            "model expects [N, 1, 2] with N >= 1");
  std::vector<float> f(5 * 3, 1.0f);
  EXPECT_EQ(dataError({x.idsRef(),
                       x.typesRef(),
                       x.labelsRef(),
                       {"attention_mask",
                        SafeTensorsDType::F32,
                        {5, 3},
                        f.data(),
                        f.size() * 4}}),
            "data.safetensors: tensor 'attention_mask' has dtype F32, the "
            "model expects i64 (any integer type)");
  Samples y(4);
  EXPECT_EQ(dataError({x.idsRef(), y.maskRef(), x.typesRef(), x.labelsRef()}),
            "data.safetensors: tensor 'attention_mask' has 4 samples but "
            "'input_ids' has 5 (every input needs one row per sample)");
  EXPECT_EQ(dataError({x.idsRef(), x.maskRef(), x.typesRef(), y.labelsRef()}),
            "data.safetensors: tensor 'labels' has 4 samples but 'input_ids' "
            "has 5");
  // The packed `input` is checked like a single input.
  EXPECT_EQ(dataError({x.packedRef(), y.labelsRef()}),
            "data.safetensors: tensor 'labels' has 4 samples but 'input' has "
            "5");
  // Fewer samples than one training mini-batch.
  Samples z(3);
  EXPECT_EQ(dataError({z.idsRef(), z.maskRef(), z.typesRef(), z.labelsRef()}),
            "data.safetensors: 3 samples, fewer than one mini-batch of 4 "
            "(every batch would repeat samples); give at least 4 samples");
}

TEST(InputParts, NoBuiltinData) {
  std::unique_ptr<Dataset> data;
  Status s = makeBuiltinDataset(trainingMetadata(), 1, data);
  EXPECT_EQ(s.message(),
            "this model takes 3 inputs ('input_ids' [N, 3], 'attention_mask' "
            "[N, 3], 'token_type_ids' [N, 1, 2], i64) and has no built-in "
            "data for them; pass --data FILE.safetensors holding each by its "
            "name and 'labels' [N] i64");
  EXPECT_FALSE(data);
}

//===----------------------------------------------------------------------===//
// Prediction
//===----------------------------------------------------------------------===//

std::string tempPath(const std::string &stem) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/gpipe-rt-" +
         std::to_string(::getpid()) + "-" + stem + ".safetensors";
}

// --predict reads the file by the inputs' names; 5 samples take 2 batches
// of 4, the second padded with the first 3 samples (their outputs dropped),
// and every output is its sample's packed row.
TEST(InputParts, PredictPacksEveryBatch) {
  ModelImage image;
  Status s = makeImage(echoMetadata(), image);
  ASSERT_TRUE(s.ok()) << s.message();
  Samples x(5);
  std::string path = tempPath("parts");
  ASSERT_TRUE(
      writeSafeTensors(path, {x.typesRef(), x.idsRef(), x.maskRef()}).ok());
  RunOptions options;
  options.predict = true;
  options.dataPath = path;
  Engine engine(image);
  RunResult result;
  s = engine.run(options, result);
  std::remove(path.c_str());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(result.steps.size(), 2u);
  ASSERT_EQ(result.outputSamples, 5);
  ASSERT_EQ(result.outputs.size(), x.packed.size() * 8);
  std::vector<int64_t> outputs(x.packed.size());
  std::memcpy(outputs.data(), result.outputs.data(), result.outputs.size());
  EXPECT_EQ(outputs, x.packed);
}

} // namespace
