//===- NestingLimit.h - The nesting depth gpipe's tools accept --*- C++ -*-===//
//
// MLIR's parser, verifier, printer and IR walks recurse once per level of
// nesting (regions in operations, attributes in attributes, types in
// types), so a deep enough input exhausts the stack and crashes: 10,000
// nested `nn.layer`s or `[[[...]]]` do. gpipe's tools scan textual IR before
// parsing it and refuse input nested deeper than kMaxIRNesting brackets,
// naming where, instead. The scan counts `{ [ ( <` against `} ] ) >`,
// skipping string literals, `//` comments and the `>` of `->`; real models
// nest a few dozen levels, and 2,000 still parse on the default 8 MiB stack.
// Bytecode (.mlirbc) is not scanned.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_SUPPORT_NESTINGLIMIT_H
#define GPIPE_SUPPORT_NESTINGLIMIT_H

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <optional>
#include <string>

namespace mlir::gpipe {

/// The deepest bracket nesting gpipe's tools read in textual IR.
constexpr unsigned kMaxIRNesting = 1000;

/// The offset in `text` of the first bracket that opens nesting level
/// `maxDepth + 1`, or nullopt when the text nests no deeper than maxDepth.
inline std::optional<size_t>
findTooDeepNesting(llvm::StringRef text, unsigned maxDepth = kMaxIRNesting) {
  // MLIR bytecode (its magic number "ML\xefR") is binary, not text: its
  // reader does not recurse on brackets, and its bytes are not brackets.
  if (text.starts_with("ML\xefR"))
    return std::nullopt;
  unsigned depth = 0;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < e && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (c == '/' && i + 1 < e && text[i + 1] == '/') {
      while (i < e && text[i] != '\n')
        ++i;
    } else if (c == '{' || c == '[' || c == '(' || c == '<') {
      if (++depth > maxDepth)
        return i;
    } else if (c == '}' || c == ']' || c == ')' ||
               (c == '>' && (i == 0 || text[i - 1] != '-'))) {
      if (depth > 0)
        --depth;
    }
  }
  return std::nullopt;
}

/// The error for input nested too deeply, in the user's terms.
inline std::string tooDeepNestingMessage(unsigned maxDepth = kMaxIRNesting) {
  return "the input nests more than " + std::to_string(maxDepth) +
         " levels deep (regions, attributes or types inside each other); "
         "gpipe reads at most " +
         std::to_string(maxDepth) + " levels";
}

} // namespace mlir::gpipe

#endif // GPIPE_SUPPORT_NESTINGLIMIT_H
