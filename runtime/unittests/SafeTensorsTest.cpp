//===- SafeTensorsTest.cpp - safetensors reader and writer ------*- C++ -*-===//
//
// Round trips through the writer and reader, every malformed-file error the
// reader reports (each names the file and, where there is one, the tensor),
// dtype conversions, and the golden file of the ONNX frontend's MLP.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/SafeTensors.h"
#include "gpipe/Runtime/CPUKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

using namespace gpipe::rt;

namespace {

/// A file `<header length><header><data>` with the header as given.
std::vector<uint8_t> rawFile(const std::string &header,
                             const std::vector<uint8_t> &data,
                             uint64_t headerLength = UINT64_MAX) {
  if (headerLength == UINT64_MAX)
    headerLength = header.size();
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 8; ++i)
    bytes.push_back(uint8_t(headerLength >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

/// Parses `bytes` named "bad.safetensors" and returns the error message
/// ("" on success).
std::string parseError(std::vector<uint8_t> bytes) {
  SafeTensorsFile file;
  Status status =
      SafeTensorsFile::parse(std::move(bytes), "bad.safetensors", file);
  return status.message();
}

std::string tempPath(const std::string &stem) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/gpipe-rt-" +
         std::to_string(::getpid()) + "-" + stem + ".safetensors";
}

TEST(SafeTensors, RoundTripThroughAFile) {
  std::vector<float> w{1.5f, -2.0f, 3.25f, 0.0f, 1e-20f, -7.0f};
  std::vector<int64_t> ids{3, 1, 4, 1, 5};
  std::vector<uint8_t> mask{1, 0, 1};
  std::vector<double> d{3.14159};
  std::vector<SafeTensorRef> tensors{
      {"weight", SafeTensorsDType::F32, {2, 3}, w.data(), w.size() * 4},
      {"ids", SafeTensorsDType::I64, {5}, ids.data(), ids.size() * 8},
      {"mask", SafeTensorsDType::BOOL, {3}, mask.data(), mask.size()},
      {"scalar", SafeTensorsDType::F64, {}, d.data(), 8},
      {"empty", SafeTensorsDType::F32, {0, 4}, nullptr, 0},
  };
  std::string path = tempPath("roundtrip");
  Status written = writeSafeTensors(path, tensors, {{"producer", "test"}});
  ASSERT_TRUE(written.ok()) << written.message();

  SafeTensorsFile file;
  Status read = SafeTensorsFile::read(path, file);
  ASSERT_TRUE(read.ok()) << read.message();
  std::remove(path.c_str());

  ASSERT_EQ(file.tensors().size(), 5u);
  // Sorted by name.
  std::vector<std::string> names;
  for (const SafeTensorInfo &info : file.tensors())
    names.push_back(info.name);
  EXPECT_EQ(names, (std::vector<std::string>{"empty", "ids", "mask", "scalar",
                                             "weight"}));
  EXPECT_EQ(file.metadata().at("producer"), "test");

  std::vector<float> wBack;
  std::vector<int64_t> shape;
  ASSERT_TRUE(file.readF32("weight", wBack, &shape).ok());
  EXPECT_EQ(wBack, w);
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 3}));
  std::vector<int64_t> idsBack, maskBack;
  ASSERT_TRUE(file.readI64("ids", idsBack).ok());
  EXPECT_EQ(idsBack, ids);
  ASSERT_TRUE(file.readI64("mask", maskBack).ok());
  EXPECT_EQ(maskBack, (std::vector<int64_t>{1, 0, 1}));
  std::vector<float> scalar;
  ASSERT_TRUE(file.readF32("scalar", scalar, &shape).ok());
  EXPECT_TRUE(shape.empty());
  EXPECT_EQ(scalar, (std::vector<float>{3.14159f}));
  const SafeTensorInfo *empty = file.find("empty");
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(empty->numElements(), 0);
  EXPECT_EQ(file.find("missing"), nullptr);
}

TEST(SafeTensors, WriterLayoutIsStandard) {
  std::vector<float> a{1, 2}, b{3};
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(
      serializeSafeTensors({{"b", SafeTensorsDType::F32, {1}, b.data(), 4},
                            {"a", SafeTensorsDType::F32, {2}, a.data(), 8}},
                           {}, bytes)
          .ok());
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  ASSERT_EQ(bytes.size(), 8 + n + 12);
  std::string header(bytes.begin() + 8, bytes.begin() + 8 + long(n));
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
            "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}");
  float data[3];
  std::memcpy(data, bytes.data() + 8 + n, 12);
  EXPECT_EQ(data[0], 1.0f);
  EXPECT_EQ(data[2], 3.0f);
}

TEST(SafeTensors, WriterRejectsBadTensors) {
  std::vector<float> a{1, 2};
  std::vector<uint8_t> bytes;
  Status s = serializeSafeTensors(
      {{"a", SafeTensorsDType::F32, {3}, a.data(), 8}}, {}, bytes);
  EXPECT_EQ(s.message(),
            "cannot write tensor 'a': 8 bytes given but F32 [3] needs 12");
  s = serializeSafeTensors({{"a", SafeTensorsDType::F32, {1}, a.data(), 4},
                            {"a", SafeTensorsDType::F32, {1}, a.data(), 4}},
                           {}, bytes);
  EXPECT_EQ(s.message(), "cannot write tensor 'a': the name is given twice");
  s = writeSafeTensors("/nonexistent-dir/x.safetensors",
                       {{"a", SafeTensorsDType::F32, {1}, a.data(), 4}});
  EXPECT_NE(s.message().find("/nonexistent-dir/x.safetensors: cannot create"),
            std::string::npos)
      << s.message();
}

TEST(SafeTensors, ConvertsHalfBFloatAndIntegers) {
  // 1.0, -2.5, 65504 (max half), 2^-24 (smallest subnormal half).
  std::vector<uint16_t> half{0x3C00, 0xC100, 0x7BFF, 0x0001};
  // 1.0, -2.5 in bfloat16.
  std::vector<uint16_t> bf{0x3F80, 0xC020};
  std::vector<int32_t> i32{-7, 9};
  std::vector<uint8_t> bytes;
  ASSERT_TRUE(
      serializeSafeTensors({{"h", SafeTensorsDType::F16, {4}, half.data(), 8},
                            {"b", SafeTensorsDType::BF16, {2}, bf.data(), 4},
                            {"i", SafeTensorsDType::I32, {2}, i32.data(), 8}},
                           {}, bytes)
          .ok());
  SafeTensorsFile file;
  ASSERT_TRUE(SafeTensorsFile::parse(bytes, "mem", file).ok());
  std::vector<float> f;
  ASSERT_TRUE(file.readF32("h", f).ok());
  EXPECT_EQ(f,
            (std::vector<float>{1.0f, -2.5f, 65504.0f, std::ldexp(1.0f, -24)}));
  ASSERT_TRUE(file.readF32("b", f).ok());
  EXPECT_EQ(f, (std::vector<float>{1.0f, -2.5f}));
  std::vector<int64_t> i;
  ASSERT_TRUE(file.readI64("i", i).ok());
  EXPECT_EQ(i, (std::vector<int64_t>{-7, 9}));
  EXPECT_EQ(file.readF32("i", f).message(),
            "mem: tensor 'i' is I32, expected a float type (F32, F64, F16, "
            "BF16)");
  EXPECT_EQ(file.readI64("h", i).message(),
            "mem: tensor 'h' is F16, expected an integer or BOOL type");
  EXPECT_EQ(file.readF32("nope", f).message(), "mem: no tensor 'nope'");
}

//===----------------------------------------------------------------------===//
// Malformed files
//===----------------------------------------------------------------------===//

const char *kGoodHeader =
    R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

TEST(SafeTensorsErrors, WellFormedControl) {
  EXPECT_EQ(parseError(rawFile(kGoodHeader, std::vector<uint8_t>(8))), "");
}

TEST(SafeTensorsErrors, Truncated) {
  EXPECT_EQ(parseError({1, 2, 3}),
            "bad.safetensors: file is 3 bytes, too short for the 8-byte "
            "header length (truncated?)");
  // Data cut short.
  EXPECT_EQ(parseError(rawFile(kGoodHeader, std::vector<uint8_t>(5))),
            "bad.safetensors: tensor 'x': data_offsets [0, 8) run past the "
            "end of the 5-byte data section (truncated?)");
}

TEST(SafeTensorsErrors, HeaderLengthBeyondFile) {
  EXPECT_EQ(parseError(rawFile(kGoodHeader, std::vector<uint8_t>(8), 1000)),
            "bad.safetensors: header length 1000 exceeds the 62 bytes after "
            "the length field (truncated?)");
}

TEST(SafeTensorsErrors, BadJson) {
  std::string message = parseError(rawFile(R"({"x": {"dtype": "F32",)", {}));
  EXPECT_EQ(message.rfind("bad.safetensors: header is not valid JSON: parse "
                          "error at line 1",
                          0),
            0u)
      << message;
  EXPECT_EQ(parseError(rawFile("[1, 2]", {})),
            "bad.safetensors: header is not a JSON object");
}

TEST(SafeTensorsErrors, OverlappingOffsets) {
  std::string header =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  EXPECT_EQ(parseError(rawFile(header, std::vector<uint8_t>(12))),
            "bad.safetensors: tensors 'a' [0, 8) and 'b' [4, 12) overlap");
}

TEST(SafeTensorsErrors, HolesAndTrailingBytes) {
  std::string header =
      R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})";
  EXPECT_EQ(parseError(rawFile(header, std::vector<uint8_t>(12))),
            "bad.safetensors: data bytes [4, 8) belong to no tensor");
  EXPECT_EQ(parseError(rawFile(kGoodHeader, std::vector<uint8_t>(10))),
            "bad.safetensors: data bytes [8, 10) belong to no tensor");
}

TEST(SafeTensorsErrors, WrongByteCount) {
  std::string header =
      R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})";
  EXPECT_EQ(parseError(rawFile(header, std::vector<uint8_t>(20))),
            "bad.safetensors: tensor 'w': data_offsets [0, 20) hold 20 bytes "
            "but F32 [2, 3] needs 24");
}

TEST(SafeTensorsErrors, BadEntries) {
  auto withEntry = [](const std::string &entry, size_t dataBytes = 8) {
    return parseError(
        rawFile("{\"t\":" + entry + "}", std::vector<uint8_t>(dataBytes)));
  };
  EXPECT_EQ(withEntry(R"({"dtype":"F33","shape":[2],"data_offsets":[0,8]})"),
            "bad.safetensors: tensor 't': unknown dtype 'F33'");
  EXPECT_EQ(withEntry(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"),
            "bad.safetensors: tensor 't': shape [-2] holds something other "
            "than non-negative integers");
  EXPECT_EQ(withEntry(R"({"dtype":"F32","shape":[2],"data_offsets":[8,0]})"),
            "bad.safetensors: tensor 't': data_offsets [8, 0) end before they "
            "begin");
  EXPECT_EQ(withEntry(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})"),
            "bad.safetensors: tensor 't': data_offsets [0] is not a pair of "
            "non-negative integers");
  EXPECT_EQ(withEntry(R"({"dtype":"F32","shape":[2]})"),
            "bad.safetensors: tensor 't': entry needs dtype, shape and "
            "data_offsets");
  EXPECT_EQ(withEntry("3"), "bad.safetensors: tensor 't': entry is not an "
                            "object");
  EXPECT_EQ(parseError(rawFile(R"({"__metadata__":{"a":1}})", {})),
            "bad.safetensors: __metadata__ entry 'a' is not a string");
  std::string twice =
      R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
      R"("t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
  EXPECT_EQ(parseError(rawFile(twice, std::vector<uint8_t>(8))),
            "bad.safetensors: header names 't' twice");
}

TEST(SafeTensorsErrors, MissingFile) {
  SafeTensorsFile file;
  Status s = SafeTensorsFile::read("/nonexistent/x.safetensors", file);
  EXPECT_EQ(s.message(),
            "/nonexistent/x.safetensors: cannot open: No such file or "
            "directory");
}

//===----------------------------------------------------------------------===//
// The MLP golden file
//===----------------------------------------------------------------------===//

TEST(SafeTensorsGolden, ReadsTheMLPGoldenFile) {
  SafeTensorsFile file;
  Status s = SafeTensorsFile::read(
      std::string(GPIPE_TEST_INPUTS_DIR) + "/mlp.golden.safetensors", file);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(file.metadata().at("producer"), "make_models.py");
  EXPECT_TRUE(file.metadata().count("torch"));

  std::vector<float> input, logits, loss;
  std::vector<int64_t> labels, shape;
  ASSERT_TRUE(file.readF32("input", input, &shape).ok());
  EXPECT_EQ(shape, (std::vector<int64_t>{8, 16}));
  ASSERT_TRUE(file.readI64("labels", labels, &shape).ok());
  EXPECT_EQ(shape, (std::vector<int64_t>{8}));
  for (int64_t l : labels) {
    EXPECT_GE(l, 0);
    EXPECT_LT(l, 10);
  }
  ASSERT_TRUE(file.readF32("logits", logits, &shape).ok());
  EXPECT_EQ(shape, (std::vector<int64_t>{8, 10}));
  ASSERT_TRUE(file.readF32("loss", loss, &shape).ok());
  EXPECT_TRUE(shape.empty());
  ASSERT_EQ(loss.size(), 1u);

  // One gradient per trainable initializer (5 Linear layers: weight, bias).
  int grads = 0;
  for (const SafeTensorInfo &info : file.tensors())
    if (info.name.rfind("grad.", 0) == 0) {
      ++grads;
      EXPECT_EQ(info.dtype, SafeTensorsDType::F32) << info.name;
    }
  EXPECT_EQ(grads, 10);

  // PyTorch's loss from its logits, recomputed by the runtime kernel.
  float ours = NAN;
  int64_t logitsShape[] = {8, 10};
  ASSERT_EQ(gpipe_rt_cpu_cross_entropy_f32(logits.data(), logitsShape, 2,
                                           GPIPE_RT_I64, labels.data(), &ours),
            GPIPE_RT_SUCCESS);
  EXPECT_LE(std::abs(ours - loss[0]), 1e-6f * std::abs(loss[0]))
      << "kernel " << ours << " vs PyTorch " << loss[0];
}

} // namespace

// A regular file is mapped, not read: the same tensors as the bytes parsed
// in memory, and a copy of the file object keeps the mapping alive.
TEST(SafeTensorsGolden, MapsRegularFiles) {
  std::string path =
      std::string(GPIPE_TEST_INPUTS_DIR) + "/mlp.golden.safetensors";
  SafeTensorsFile mapped;
  ASSERT_TRUE(SafeTensorsFile::read(path, mapped).ok());
  EXPECT_TRUE(mapped.isMapped());
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  SafeTensorsFile parsed;
  ASSERT_TRUE(SafeTensorsFile::parse(bytes, path, parsed).ok());
  EXPECT_FALSE(parsed.isMapped());
  SafeTensorsFile copy;
  {
    SafeTensorsFile scoped;
    ASSERT_TRUE(SafeTensorsFile::read(path, scoped).ok());
    copy = scoped;
  }
  ASSERT_EQ(mapped.tensors().size(), parsed.tensors().size());
  for (const SafeTensorInfo &info : parsed.tensors()) {
    const SafeTensorInfo *m = copy.find(info.name);
    ASSERT_NE(m, nullptr) << info.name;
    EXPECT_EQ(
        std::memcmp(copy.data(*m), parsed.data(info), size_t(info.byteSize())),
        0)
        << info.name;
  }
}
