//===- SafeTensors.h - Reading and writing safetensors files ----*- C++ -*-===//
//
// The file format gpipe keeps tensors in on disk (training data, parameters,
// gradients, checkpoints): Hugging Face's safetensors. A file is an 8-byte
// little-endian header length N, N bytes of JSON mapping each tensor name to
// {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
// data section) plus an optional "__metadata__" map of strings, then the raw
// little-endian data. The reader validates everything and names the file and
// the tensor in its errors; the writer produces the standard layout (header
// padded with spaces to a multiple of 8, tensors sorted by name, data packed
// in that order) and replaces the target file atomically.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_RUNTIME_SAFETENSORS_H
#define GPIPE_RUNTIME_SAFETENSORS_H

#include "gpipe/Runtime/Common.h"
#include "gpipe/Runtime/Status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpipe::rt {

/// Element types of the safetensors format.
enum class SafeTensorsDType : uint8_t {
  BOOL,
  U8,
  I8,
  U16,
  I16,
  F16,
  BF16,
  U32,
  I32,
  F32,
  U64,
  I64,
  F64,
  F8_E4M3,
  F8_E5M2,
};

/// The format's spelling ("F32", "BF16", ...).
const char *safeTensorsDTypeName(SafeTensorsDType dtype);
/// Parses the format's spelling.
std::optional<SafeTensorsDType> parseSafeTensorsDType(std::string_view name);
/// Bytes per element.
size_t safeTensorsDTypeSize(SafeTensorsDType dtype);
/// The runtime element type of the same layout (F32, F64, F16, BF16, I64,
/// I32, BOOL), if any.
std::optional<gpipe_rt_dtype> toRuntimeDType(SafeTensorsDType dtype);
/// The safetensors element type of a runtime element type.
SafeTensorsDType fromRuntimeDType(gpipe_rt_dtype dtype);

/// One tensor of a file as its header describes it.
struct SafeTensorInfo {
  std::string name;
  SafeTensorsDType dtype = SafeTensorsDType::F32;
  std::vector<int64_t> shape;
  /// Byte range [begin, end) in the data section.
  uint64_t begin = 0, end = 0;

  int64_t numElements() const;
  uint64_t byteSize() const { return end - begin; }
};

/// A validated safetensors file held in memory.
class SafeTensorsFile {
public:
  /// Maps (or, where a file cannot be mapped, reads) and validates the file
  /// at `path`: a regular file is memory-mapped read-only, so tensors are
  /// read from the page cache as they are used and a file larger than
  /// memory can be read.
  static Status read(const std::string &path, SafeTensorsFile &file);
  /// Validates `bytes` as a safetensors file; `name` (usually the path)
  /// names it in errors.
  static Status parse(std::vector<uint8_t> bytes, std::string name,
                      SafeTensorsFile &file);

  /// The path or name the file was read from.
  const std::string &name() const { return fileName; }
  /// Every tensor, sorted by name.
  const std::vector<SafeTensorInfo> &tensors() const { return infos; }
  /// The tensor called `name`, or null.
  const SafeTensorInfo *find(std::string_view tensorName) const;
  /// The raw little-endian bytes of `info` (`info.byteSize()` of them; not
  /// necessarily aligned for the element type).
  const uint8_t *data(const SafeTensorInfo &info) const {
    return storage->data() + dataStart + info.begin;
  }
  /// Whether the bytes are a mapping of the file (not a copy in memory).
  bool isMapped() const { return storage && storage->mapped(); }

  /// The bytes of a file: a read-only mapping or a copy in memory. Shared
  /// by copies of the SafeTensorsFile (and whatever keeps a pointer into
  /// it, such as a dataset).
  class Storage {
  public:
    virtual ~Storage();
    virtual const uint8_t *data() const = 0;
    virtual size_t size() const = 0;
    virtual bool mapped() const = 0;
  };
  /// The storage, to keep the bytes alive beside a pointer into them.
  std::shared_ptr<const Storage> getStorage() const { return storage; }
  /// The header's "__metadata__" (empty if absent).
  const std::map<std::string, std::string> &metadata() const { return meta; }

  /// Reads tensor `tensorName` as floats, converting from F64, F16 or BF16;
  /// `shape` (optional) receives its shape.
  Status readF32(std::string_view tensorName, std::vector<float> &values,
                 std::vector<int64_t> *shape = nullptr) const;
  /// Reads tensor `tensorName` as int64, converting from any integer or
  /// BOOL type.
  Status readI64(std::string_view tensorName, std::vector<int64_t> &values,
                 std::vector<int64_t> *shape = nullptr) const;

private:
  static Status parseStorage(std::shared_ptr<const Storage> storage,
                             std::string name, SafeTensorsFile &file);

  std::string fileName;
  std::shared_ptr<const Storage> storage;
  size_t dataStart = 0;
  std::vector<SafeTensorInfo> infos;
  std::map<std::string, std::string> meta;
};

/// A tensor to write: `size` bytes at `data`, which must equal the shape's
/// element count times the dtype's size.
struct SafeTensorRef {
  std::string name;
  SafeTensorsDType dtype = SafeTensorsDType::F32;
  std::vector<int64_t> shape;
  const void *data = nullptr;
  size_t size = 0;
};

/// Serializes `tensors` (any order; written sorted by name) and `metadata`
/// (omitted when empty) into `out`.
Status serializeSafeTensors(const std::vector<SafeTensorRef> &tensors,
                            const std::map<std::string, std::string> &metadata,
                            std::vector<uint8_t> &out);

/// Writes a safetensors file atomically: to a temporary file next to `path`,
/// flushed to disk, then renamed over `path`.
Status
writeSafeTensors(const std::string &path,
                 const std::vector<SafeTensorRef> &tensors,
                 const std::map<std::string, std::string> &metadata = {});

} // namespace gpipe::rt

#endif // GPIPE_RUNTIME_SAFETENSORS_H
