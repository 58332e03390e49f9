//===- EnumOption.h - Enum-typed options that list their values -*- C++ -*-===//
//
// The parser of gpipe's enum-typed options, both command-line flags
// (`llvm::cl::opt<T>`) and pass and pipeline options (`Pass::Option<T>`,
// `PassPipelineOptions`): the values are given once with
// `llvm::cl::values(clEnumValN(...))`, and a value that is not among them is
// rejected while the option is parsed, naming the valid ones:
//
//   for the --remat option: unknown remat 'all' (expected stage or none)
//
// `GPIPE_ENUM_OPTION_PARSER(T)` makes it `llvm::cl::parser<T>`. Use it at
// global scope next to the enum's list of values, before any option of type
// T is declared. MLIR's pass options recognize it as a generic parser, so a
// pipeline prints its enum options by name.
//
//===----------------------------------------------------------------------===//

#ifndef GPIPE_SUPPORT_ENUMOPTION_H
#define GPIPE_SUPPORT_ENUMOPTION_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace mlir::gpipe {

/// llvm::cl::parser<EnumT>'s behaviour, with the unknown-value error naming
/// the valid values (those with a non-empty name).
template <typename EnumT>
class EnumOptionParser : public llvm::cl::generic_parser_base {
public:
  class OptionInfo : public GenericOptionInfo {
  public:
    OptionInfo(llvm::StringRef name, EnumT value, llvm::StringRef helpStr)
        : GenericOptionInfo(name, helpStr), V(value) {}
    llvm::cl::OptionValue<EnumT> V;
  };
  /// The values, in the order given; MLIR's pass options read them.
  llvm::SmallVector<OptionInfo, 8> Values;

  using parser_data_type = EnumT;

  explicit EnumOptionParser(llvm::cl::Option &owner)
      : generic_parser_base(owner) {}

  unsigned getNumOptions() const override { return Values.size(); }
  llvm::StringRef getOption(unsigned n) const override {
    return Values[n].Name;
  }
  llvm::StringRef getDescription(unsigned n) const override {
    return Values[n].HelpStr;
  }
  const llvm::cl::GenericOptionValue &
  getOptionValue(unsigned n) const override {
    return Values[n].V;
  }

  bool parse(llvm::cl::Option &owner, llvm::StringRef argName,
             llvm::StringRef arg, EnumT &value) {
    llvm::StringRef name = owner.hasArgStr() ? arg : argName;
    for (const OptionInfo &info : Values) {
      if (info.Name == name) {
        value = info.V.getValue();
        return false;
      }
    }
    return owner.error("unknown " + owner.ArgStr + " '" + name +
                       "' (expected " + getExpectedValues() + ")");
  }

  /// The valid values, each by its first name: "gpipe or 1f1b", "cpu, h200
  /// or h200-bf16". Further names of a value (aliases) and the empty name
  /// are accepted but not listed.
  std::string getExpectedValues() const {
    llvm::SmallVector<llvm::StringRef> names;
    for (size_t i = 0; i < Values.size(); ++i) {
      bool alias = false;
      for (size_t j = 0; j < i; ++j)
        alias |= Values[j].V.getValue() == Values[i].V.getValue();
      if (!alias && !Values[i].Name.empty())
        names.push_back(Values[i].Name);
    }
    std::string text;
    for (size_t i = 0; i < names.size(); ++i) {
      if (i)
        text += i + 1 == names.size() ? " or " : ", ";
      text += names[i].str();
    }
    return text;
  }

  /// Called by `llvm::cl::values` for each value.
  template <typename DT>
  void addLiteralOption(llvm::StringRef name, const DT &value,
                        llvm::StringRef helpStr) {
    Values.emplace_back(name, static_cast<EnumT>(value), helpStr);
    llvm::cl::AddLiteralOption(Owner, name);
  }

  void removeLiteralOption(llvm::StringRef name) {
    for (unsigned i = 0; i < Values.size(); ++i) {
      if (Values[i].Name == name) {
        Values.erase(Values.begin() + i);
        return;
      }
    }
  }
};

} // namespace mlir::gpipe

/// Makes `EnumOptionParser<T>` the parser of every option of enum type T.
#define GPIPE_ENUM_OPTION_PARSER(T)                                            \
  template <>                                                                  \
  class llvm::cl::parser<T> : public ::mlir::gpipe::EnumOptionParser<T> {      \
  public:                                                                      \
    explicit parser(::llvm::cl::Option &owner)                                 \
        : ::mlir::gpipe::EnumOptionParser<T>(owner) {}                         \
  };

#endif // GPIPE_SUPPORT_ENUMOPTION_H
