//===- ResourceBlobs.h - Resource blobs MLIR's parser mishandles -*- C++
//-*-===//
//
// A `dense_resource` blob in the `{-# dialect_resources ... #-}` section of
// textual IR is a hex string whose first 4 bytes (little endian) are the
// blob's alignment. MLIR 22's parser rejects an alignment that is not a
// power of two, except 0, which it passes to the aligned allocator: under
// AddressSanitizer the process aborts, otherwise the allocation fails and
// looks like running out of memory. gpipe's tools scan textual IR before
// parsing it and refuse such a blob, naming where.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_SUPPORT_RESOURCEBLOBS_H
#define GPIPE_SUPPORT_RESOURCEBLOBS_H

#include "gpipe/Support/NestingLimit.h"

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

namespace mlir::gpipe {

/// The offset in `text` of the first hex string of a `{-# ... #-}` resource
/// section whose first 4 bytes encode alignment 0, or nullopt.
inline std::optional<size_t> findZeroAlignedBlob(llvm::StringRef text) {
  size_t section = text.find("{-#");
  while (section != llvm::StringRef::npos) {
    size_t end = text.find("#-}", section);
    if (end == llvm::StringRef::npos)
      end = text.size();
    for (size_t i = section; i < end; ++i) {
      if (text[i] != '"')
        continue;
      // A string: "0x" and at least 8 hex digits hold the alignment.
      llvm::StringRef rest = text.substr(i + 1);
      bool zero = rest.size() >= 10 && rest.starts_with("0x");
      for (size_t k = 2; zero && k < 10; ++k)
        zero = rest[k] == '0';
      if (zero)
        return i;
      size_t close = text.find('"', i + 1);
      if (close == llvm::StringRef::npos)
        return std::nullopt;
      i = close;
    }
    section = text.find("{-#", end);
  }
  return std::nullopt;
}

inline const char *zeroAlignedBlobMessage() {
  return "resource blob encodes alignment 0 in its first 4 bytes; expected "
         "a power of two (such as 0x04000000 for 4)";
}

/// What gpipe's tools check in textual IR before MLIR parses it: nesting
/// deeper than NestingLimit.h allows, then a zero-aligned resource blob.
/// The offset of the first problem and its message, or nullopt.
inline std::optional<std::pair<size_t, std::string>>
findUnparsableIR(llvm::StringRef text) {
  if (std::optional<size_t> deep = findTooDeepNesting(text))
    return std::make_pair(*deep, tooDeepNestingMessage());
  if (std::optional<size_t> blob = findZeroAlignedBlob(text))
    return std::make_pair(*blob, std::string(zeroAlignedBlobMessage()));
  return std::nullopt;
}

} // namespace mlir::gpipe

#endif // GPIPE_SUPPORT_RESOURCEBLOBS_H
