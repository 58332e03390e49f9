//===- SafeTensors.cpp - Reading and writing safetensors files --*- C++ -*-===//
//
// The safetensors reader and writer of SafeTensors.h. The reader checks the
// header length against the file size, parses the JSON header without
// exceptions (a second, SAX-only pass recovers the parser's message when it
// fails), and validates every entry: known dtype, non-negative shape whose
// byte size matches its data_offsets, offsets inside the data section,
// tensors neither overlapping nor leaving holes, no duplicate names. The
// writer lays tensors out sorted by name and pads the header with spaces to a
// multiple of 8 bytes, as the reference implementation does.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Runtime/SafeTensors.h"

#include "Files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <set>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the safetensors reader assumes a little-endian host");

namespace gpipe::rt {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

/// The reference implementation's limit on the header size.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

constexpr const char *kMetadataKey = "__metadata__";

struct DTypeEntry {
  SafeTensorsDType dtype;
  const char *name;
  size_t size;
};

constexpr DTypeEntry kDTypes[] = {
    {SafeTensorsDType::BOOL, "BOOL", 1},
    {SafeTensorsDType::U8, "U8", 1},
    {SafeTensorsDType::I8, "I8", 1},
    {SafeTensorsDType::U16, "U16", 2},
    {SafeTensorsDType::I16, "I16", 2},
    {SafeTensorsDType::F16, "F16", 2},
    {SafeTensorsDType::BF16, "BF16", 2},
    {SafeTensorsDType::U32, "U32", 4},
    {SafeTensorsDType::I32, "I32", 4},
    {SafeTensorsDType::F32, "F32", 4},
    {SafeTensorsDType::U64, "U64", 8},
    {SafeTensorsDType::I64, "I64", 8},
    {SafeTensorsDType::F64, "F64", 8},
    {SafeTensorsDType::F8_E4M3, "F8_E4M3", 1},
    {SafeTensorsDType::F8_E5M2, "F8_E5M2", 1},
};

const DTypeEntry &entryOf(SafeTensorsDType dtype) {
  for (const DTypeEntry &e : kDTypes)
    if (e.dtype == dtype)
      return e;
  return kDTypes[0];
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

/// Errors about a file: "<file>: <message>".
struct FileError {
  const std::string &file;
  Status operator()(const std::string &message) const {
    return Status::error(file + ": " + message);
  }
  Status tensor(const std::string &name, const std::string &message) const {
    return Status::error(file + ": tensor '" + name + "': " + message);
  }
};

/// Strips nlohmann's "[json.exception.parse_error.101] " prefix.
std::string cleanJsonMessage(std::string message) {
  if (!message.empty() && message[0] == '[') {
    size_t close = message.find("] ");
    if (close != std::string::npos)
      message.erase(0, close + 2);
  }
  return message;
}

/// A SAX consumer that keeps nothing but the parse error, for recovering the
/// parser's message after the non-throwing DOM parse failed.
class ErrorCatcher : public nlohmann::json_sax<Json> {
public:
  std::string message;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t &) override { return true; }
  bool string(string_t &) override { return true; }
  bool binary(binary_t &) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t &) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string &,
                   const nlohmann::detail::exception &ex) override {
    message = cleanJsonMessage(ex.what());
    return false;
  }
};

/// A JSON value as a non-negative integer.
bool readUnsigned(const Json &value, uint64_t &out) {
  if (!value.is_number_unsigned())
    return false;
  out = value.get<uint64_t>();
  return true;
}

uint16_t loadU16(const uint8_t *p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1F;
  uint32_t mantissa = h & 0x3FF;
  uint32_t bits;
  if (exponent == 0x1F) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    // Subnormal half: normalize.
    int shift = 0;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3FF;
    bits = sign | (uint32_t(113 - shift) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

float bf16ToFloat(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

template <typename T> T loadAs(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

Status readWholeFile(const std::string &path, std::vector<uint8_t> &bytes) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return Status::error(path + ": cannot open: " + std::strerror(errno));
  bytes.clear();
  uint8_t buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0)
    bytes.insert(bytes.end(), buffer, buffer + n);
  bool failed = std::ferror(f) != 0;
  int err = errno;
  std::fclose(f);
  if (failed)
    return Status::error(path + ": read error: " + std::strerror(err));
  return Status::success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

const char *safeTensorsDTypeName(SafeTensorsDType dtype) {
  return entryOf(dtype).name;
}

std::optional<SafeTensorsDType> parseSafeTensorsDType(std::string_view name) {
  for (const DTypeEntry &e : kDTypes)
    if (name == e.name)
      return e.dtype;
  return std::nullopt;
}

size_t safeTensorsDTypeSize(SafeTensorsDType dtype) {
  return entryOf(dtype).size;
}

std::optional<gpipe_rt_dtype> toRuntimeDType(SafeTensorsDType dtype) {
  switch (dtype) {
  case SafeTensorsDType::F32:
    return GPIPE_RT_F32;
  case SafeTensorsDType::F64:
    return GPIPE_RT_F64;
  case SafeTensorsDType::F16:
    return GPIPE_RT_F16;
  case SafeTensorsDType::BF16:
    return GPIPE_RT_BF16;
  case SafeTensorsDType::I64:
    return GPIPE_RT_I64;
  case SafeTensorsDType::I32:
    return GPIPE_RT_I32;
  case SafeTensorsDType::BOOL:
    return GPIPE_RT_BOOL;
  default:
    return std::nullopt;
  }
}

SafeTensorsDType fromRuntimeDType(gpipe_rt_dtype dtype) {
  switch (dtype) {
  case GPIPE_RT_F32:
    return SafeTensorsDType::F32;
  case GPIPE_RT_F64:
    return SafeTensorsDType::F64;
  case GPIPE_RT_F16:
    return SafeTensorsDType::F16;
  case GPIPE_RT_BF16:
    return SafeTensorsDType::BF16;
  case GPIPE_RT_I64:
    return SafeTensorsDType::I64;
  case GPIPE_RT_I32:
    return SafeTensorsDType::I32;
  case GPIPE_RT_BOOL:
    return SafeTensorsDType::BOOL;
  }
  return SafeTensorsDType::F32;
}

int64_t SafeTensorInfo::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

SafeTensorsFile::Storage::~Storage() = default;

namespace {

/// Bytes in memory.
class VectorStorage : public SafeTensorsFile::Storage {
public:
  explicit VectorStorage(std::vector<uint8_t> bytes)
      : bytes(std::move(bytes)) {}
  const uint8_t *data() const override { return bytes.data(); }
  size_t size() const override { return bytes.size(); }
  bool mapped() const override { return false; }

private:
  std::vector<uint8_t> bytes;
};

/// A read-only private mapping of a whole file.
class MappedStorage : public SafeTensorsFile::Storage {
public:
  MappedStorage(void *base, size_t length) : base(base), length(length) {}
  ~MappedStorage() override { ::munmap(base, length); }
  const uint8_t *data() const override {
    return static_cast<const uint8_t *>(base);
  }
  size_t size() const override { return length; }
  bool mapped() const override { return true; }

private:
  void *base;
  size_t length;
};

/// Maps a regular, non-empty file; null (and no error) for anything else
/// (a pipe, an empty file), which is read instead.
Status mapFile(const std::string &path,
               std::shared_ptr<const SafeTensorsFile::Storage> &out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
    ::close(fd);
    return Status::success();
  }
  void *base =
      ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  int err = errno;
  ::close(fd);
  if (base == MAP_FAILED)
    return Status::error(path + ": cannot map: " + std::strerror(err));
  out = std::make_shared<MappedStorage>(base, size_t(st.st_size));
  return Status::success();
}

} // namespace

Status SafeTensorsFile::read(const std::string &path, SafeTensorsFile &file) {
  std::shared_ptr<const Storage> storage;
  if (Status s = mapFile(path, storage); !s.ok())
    return s;
  if (!storage) {
    std::vector<uint8_t> bytes;
    Status status = readWholeFile(path, bytes);
    if (!status.ok())
      return status;
    storage = std::make_shared<VectorStorage>(std::move(bytes));
  }
  return parseStorage(std::move(storage), path, file);
}

Status SafeTensorsFile::parse(std::vector<uint8_t> bytes, std::string name,
                              SafeTensorsFile &file) {
  return parseStorage(std::make_shared<VectorStorage>(std::move(bytes)),
                      std::move(name), file);
}

Status SafeTensorsFile::parseStorage(std::shared_ptr<const Storage> storage,
                                     std::string name, SafeTensorsFile &file) {
  FileError fail{name};
  const uint8_t *bytes = storage->data();
  const size_t size = storage->size();
  if (size < 8)
    return fail("file is " + std::to_string(size) +
                " bytes, too short for the 8-byte header length (truncated?)");
  uint64_t headerLength = loadAs<uint64_t>(bytes);
  uint64_t available = size - 8;
  if (headerLength > available)
    return fail("header length " + std::to_string(headerLength) +
                " exceeds the " + std::to_string(available) +
                " bytes after the length field (truncated?)");
  if (headerLength > kMaxHeaderBytes)
    return fail("header length " + std::to_string(headerLength) +
                " exceeds the limit of " + std::to_string(kMaxHeaderBytes) +
                " bytes");
  const uint8_t *headerBegin = bytes + 8;
  const uint8_t *headerEnd = headerBegin + headerLength;

  // Top-level keys, to reject duplicates (the DOM keeps only the last).
  std::set<std::string> seen;
  std::string duplicate;
  Json::parser_callback_t onEvent = [&](int depth, Json::parse_event_t event,
                                        Json &parsed) {
    if (depth == 1 && event == Json::parse_event_t::key && parsed.is_string()) {
      const std::string &key = parsed.get_ref<const std::string &>();
      if (!seen.insert(key).second && duplicate.empty())
        duplicate = key;
    }
    return true;
  };
  Json header = Json::parse(headerBegin, headerEnd, onEvent,
                            /*allow_exceptions=*/false);
  if (header.is_discarded()) {
    ErrorCatcher catcher;
    Json::sax_parse(headerBegin, headerEnd, &catcher);
    return fail("header is not valid JSON" + (catcher.message.empty()
                                                  ? std::string()
                                                  : ": " + catcher.message));
  }
  if (!header.is_object())
    return fail("header is not a JSON object");
  if (!duplicate.empty())
    return fail("header names '" + duplicate + "' twice");

  uint64_t dataSize = available - headerLength;
  std::vector<SafeTensorInfo> infos;
  std::map<std::string, std::string> meta;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &key = it.key();
    const Json &value = it.value();
    if (key == kMetadataKey) {
      if (!value.is_object())
        return fail("__metadata__ is not an object");
      for (auto m = value.begin(); m != value.end(); ++m) {
        if (!m.value().is_string())
          return fail("__metadata__ entry '" + m.key() + "' is not a string");
        meta[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (key.empty())
      return fail("a tensor has an empty name");
    if (!value.is_object())
      return fail.tensor(key, "entry is not an object");
    auto dtypeIt = value.find("dtype");
    auto shapeIt = value.find("shape");
    auto offsetsIt = value.find("data_offsets");
    if (dtypeIt == value.end() || shapeIt == value.end() ||
        offsetsIt == value.end())
      return fail.tensor(key, "entry needs dtype, shape and data_offsets");
    if (!dtypeIt->is_string())
      return fail.tensor(key, "dtype is not a string");
    std::optional<SafeTensorsDType> dtype =
        parseSafeTensorsDType(dtypeIt->get_ref<const std::string &>());
    if (!dtype)
      return fail.tensor(key, "unknown dtype '" +
                                  dtypeIt->get_ref<const std::string &>() +
                                  "'");
    SafeTensorInfo info;
    info.name = key;
    info.dtype = *dtype;
    if (!shapeIt->is_array())
      return fail.tensor(key, "shape is not an array");
    uint64_t elements = 1;
    bool overflow = false;
    for (const Json &d : *shapeIt) {
      uint64_t dim;
      if (!readUnsigned(d, dim) ||
          dim > uint64_t(std::numeric_limits<int64_t>::max()))
        return fail.tensor(key, "shape " + shapeIt->dump() +
                                    " holds something other than "
                                    "non-negative integers");
      info.shape.push_back(int64_t(dim));
      if (dim != 0 && elements > std::numeric_limits<uint64_t>::max() / dim)
        overflow = true;
      elements *= dim;
    }
    for (int64_t d : info.shape)
      if (d == 0)
        elements = 0, overflow = false;
    size_t elemSize = safeTensorsDTypeSize(info.dtype);
    if (overflow || elements > std::numeric_limits<uint64_t>::max() / elemSize)
      return fail.tensor(key,
                         "shape " + formatShape(info.shape) + " is too large");
    uint64_t expectedBytes = elements * elemSize;
    if (!offsetsIt->is_array() || offsetsIt->size() != 2 ||
        !readUnsigned((*offsetsIt)[0], info.begin) ||
        !readUnsigned((*offsetsIt)[1], info.end))
      return fail.tensor(key, "data_offsets " + offsetsIt->dump() +
                                  " is not a pair of non-negative integers");
    std::string range = "[" + std::to_string(info.begin) + ", " +
                        std::to_string(info.end) + ")";
    if (info.begin > info.end)
      return fail.tensor(key,
                         "data_offsets " + range + " end before they begin");
    if (info.end > dataSize)
      return fail.tensor(key, "data_offsets " + range +
                                  " run past the end of the " +
                                  std::to_string(dataSize) +
                                  "-byte data section (truncated?)");
    if (info.end - info.begin != expectedBytes)
      return fail.tensor(key, "data_offsets " + range + " hold " +
                                  std::to_string(info.end - info.begin) +
                                  " bytes but " +
                                  safeTensorsDTypeName(info.dtype) + " " +
                                  formatShape(info.shape) + " needs " +
                                  std::to_string(expectedBytes));
    infos.push_back(std::move(info));
  }

  // The data section must be covered exactly: no overlaps, no holes.
  std::vector<const SafeTensorInfo *> byOffset;
  for (const SafeTensorInfo &info : infos)
    byOffset.push_back(&info);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const SafeTensorInfo *a, const SafeTensorInfo *b) {
              return std::make_pair(a->begin, a->end) <
                     std::make_pair(b->begin, b->end);
            });
  uint64_t covered = 0;
  const SafeTensorInfo *previous = nullptr;
  for (const SafeTensorInfo *info : byOffset) {
    if (info->begin < covered)
      return fail("tensors '" + previous->name + "' [" +
                  std::to_string(previous->begin) + ", " +
                  std::to_string(previous->end) + ") and '" + info->name +
                  "' [" + std::to_string(info->begin) + ", " +
                  std::to_string(info->end) + ") overlap");
    if (info->begin > covered)
      return fail("data bytes [" + std::to_string(covered) + ", " +
                  std::to_string(info->begin) + ") belong to no tensor");
    covered = info->end;
    previous = info;
  }
  if (covered != dataSize)
    return fail("data bytes [" + std::to_string(covered) + ", " +
                std::to_string(dataSize) + ") belong to no tensor");

  std::sort(infos.begin(), infos.end(),
            [](const SafeTensorInfo &a, const SafeTensorInfo &b) {
              return a.name < b.name;
            });
  file.fileName = std::move(name);
  file.storage = std::move(storage);
  file.dataStart = size_t(8 + headerLength);
  file.infos = std::move(infos);
  file.meta = std::move(meta);
  return Status::success();
}

const SafeTensorInfo *SafeTensorsFile::find(std::string_view tensorName) const {
  auto it =
      std::lower_bound(infos.begin(), infos.end(), tensorName,
                       [](const SafeTensorInfo &info, std::string_view n) {
                         return std::string_view(info.name) < n;
                       });
  if (it == infos.end() || it->name != tensorName)
    return nullptr;
  return &*it;
}

Status SafeTensorsFile::readF32(std::string_view tensorName,
                                std::vector<float> &values,
                                std::vector<int64_t> *shape) const {
  const SafeTensorInfo *info = find(tensorName);
  if (!info)
    return Status::error(fileName + ": no tensor '" + std::string(tensorName) +
                         "'");
  const uint8_t *p = data(*info);
  int64_t n = info->numElements();
  values.resize(size_t(n));
  switch (info->dtype) {
  case SafeTensorsDType::F32:
    if (n)
      std::memcpy(values.data(), p, size_t(n) * sizeof(float));
    break;
  case SafeTensorsDType::F64:
    for (int64_t i = 0; i < n; ++i)
      values[size_t(i)] = float(loadAs<double>(p + 8 * i));
    break;
  case SafeTensorsDType::F16:
    for (int64_t i = 0; i < n; ++i)
      values[size_t(i)] = halfToFloat(loadU16(p + 2 * i));
    break;
  case SafeTensorsDType::BF16:
    for (int64_t i = 0; i < n; ++i)
      values[size_t(i)] = bf16ToFloat(loadU16(p + 2 * i));
    break;
  default:
    return Status::error(fileName + ": tensor '" + info->name + "' is " +
                         safeTensorsDTypeName(info->dtype) +
                         ", expected a float type (F32, F64, F16, BF16)");
  }
  if (shape)
    *shape = info->shape;
  return Status::success();
}

Status SafeTensorsFile::readI64(std::string_view tensorName,
                                std::vector<int64_t> &values,
                                std::vector<int64_t> *shape) const {
  const SafeTensorInfo *info = find(tensorName);
  if (!info)
    return Status::error(fileName + ": no tensor '" + std::string(tensorName) +
                         "'");
  const uint8_t *p = data(*info);
  int64_t n = info->numElements();
  values.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    int64_t v;
    switch (info->dtype) {
    case SafeTensorsDType::BOOL:
      v = p[i] != 0;
      break;
    case SafeTensorsDType::U8:
      v = p[i];
      break;
    case SafeTensorsDType::I8:
      v = loadAs<int8_t>(p + i);
      break;
    case SafeTensorsDType::U16:
      v = loadAs<uint16_t>(p + 2 * i);
      break;
    case SafeTensorsDType::I16:
      v = loadAs<int16_t>(p + 2 * i);
      break;
    case SafeTensorsDType::U32:
      v = loadAs<uint32_t>(p + 4 * i);
      break;
    case SafeTensorsDType::I32:
      v = loadAs<int32_t>(p + 4 * i);
      break;
    case SafeTensorsDType::I64:
      v = loadAs<int64_t>(p + 8 * i);
      break;
    case SafeTensorsDType::U64: {
      uint64_t u = loadAs<uint64_t>(p + 8 * i);
      if (u > uint64_t(std::numeric_limits<int64_t>::max()))
        return Status::error(fileName + ": tensor '" + info->name +
                             "': element " + std::to_string(i) + " (" +
                             std::to_string(u) + ") does not fit in int64");
      v = int64_t(u);
      break;
    }
    default:
      return Status::error(fileName + ": tensor '" + info->name + "' is " +
                           safeTensorsDTypeName(info->dtype) +
                           ", expected an integer or BOOL type");
    }
    values[size_t(i)] = v;
  }
  if (shape)
    *shape = info->shape;
  return Status::success();
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

Status serializeSafeTensors(const std::vector<SafeTensorRef> &tensors,
                            const std::map<std::string, std::string> &metadata,
                            std::vector<uint8_t> &out) {
  std::vector<const SafeTensorRef *> sorted;
  for (const SafeTensorRef &t : tensors)
    sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(),
            [](const SafeTensorRef *a, const SafeTensorRef *b) {
              return a->name < b->name;
            });

  OrderedJson header = OrderedJson::object();
  if (!metadata.empty()) {
    OrderedJson meta = OrderedJson::object();
    for (const auto &[key, value] : metadata)
      meta[key] = value;
    header[kMetadataKey] = std::move(meta);
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const SafeTensorRef &t = *sorted[i];
    auto fail = [&](const std::string &message) {
      return Status::error("cannot write tensor '" + t.name + "': " + message);
    };
    if (t.name.empty())
      return Status::error("cannot write a tensor with an empty name");
    if (t.name == kMetadataKey)
      return fail("the name is reserved for the metadata");
    if (i > 0 && sorted[i - 1]->name == t.name)
      return fail("the name is given twice");
    uint64_t elements = 1;
    for (int64_t d : t.shape) {
      if (d < 0)
        return fail("negative dim in shape " + formatShape(t.shape));
      if (d != 0 &&
          elements > std::numeric_limits<uint64_t>::max() / uint64_t(d))
        return fail("shape " + formatShape(t.shape) + " is too large");
      elements *= uint64_t(d);
    }
    uint64_t bytes = elements * safeTensorsDTypeSize(t.dtype);
    if (bytes != t.size)
      return fail(std::to_string(t.size) + " bytes given but " +
                  safeTensorsDTypeName(t.dtype) + " " + formatShape(t.shape) +
                  " needs " + std::to_string(bytes));
    if (bytes > 0 && !t.data)
      return fail("null data");
    OrderedJson entry = OrderedJson::object();
    entry["dtype"] = safeTensorsDTypeName(t.dtype);
    entry["shape"] = t.shape;
    entry["data_offsets"] = {offset, offset + bytes};
    header[t.name] = std::move(entry);
    offset += bytes;
  }

  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t headerLength = text.size();
  out.clear();
  out.reserve(size_t(8 + headerLength + offset));
  for (int i = 0; i < 8; ++i)
    out.push_back(uint8_t(headerLength >> (8 * i)));
  out.insert(out.end(), text.begin(), text.end());
  for (const SafeTensorRef *t : sorted) {
    const uint8_t *p = static_cast<const uint8_t *>(t->data);
    if (t->size)
      out.insert(out.end(), p, p + t->size);
  }
  return Status::success();
}

Status writeSafeTensors(const std::string &path,
                        const std::vector<SafeTensorRef> &tensors,
                        const std::map<std::string, std::string> &metadata) {
  std::vector<uint8_t> bytes;
  Status status = serializeSafeTensors(tensors, metadata, bytes);
  if (!status.ok())
    return Status::error(path + ": " + status.message());

  return replaceFile(path, bytes);
}

} // namespace gpipe::rt
