//===- EnumOptionTest.cpp - Enum-typed option parser tests ------*- C++ -*-===//
//
// Unit tests of gpipe/Support/EnumOption.h through a pass-pipeline options
// struct: values parse by name (aliases too), print by their first name, and
// an unknown value is refused with the valid values listed once each.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Support/EnumOption.h"

#include "mlir/Pass/PassOptions.h"

#include <gtest/gtest.h>

namespace {
enum class Colour { Red, Green, Unset };
} // namespace

GPIPE_ENUM_OPTION_PARSER(Colour)

namespace {

struct ColourOptions : public mlir::PassPipelineOptions<ColourOptions> {
  Option<Colour> colour{
      *this, "colour", llvm::cl::desc("A colour"),
      llvm::cl::init(Colour::Unset),
      llvm::cl::values(clEnumValN(Colour::Red, "red", "red"),
                       clEnumValN(Colour::Green, "green", "green"),
                       clEnumValN(Colour::Green, "verde", "the same as green"),
                       clEnumValN(Colour::Unset, "", "no colour"))};
};

std::string print(const ColourOptions &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  options.print(os);
  return text;
}

TEST(EnumOptionTest, ParsesAndPrintsByName) {
  ColourOptions options;
  ASSERT_TRUE(mlir::succeeded(options.parseFromString("colour=red")));
  EXPECT_EQ(options.colour, Colour::Red);
  ASSERT_TRUE(mlir::succeeded(options.parseFromString("colour=verde")));
  EXPECT_EQ(options.colour, Colour::Green);
  EXPECT_EQ(print(options), "{colour=green}");
  ASSERT_TRUE(mlir::succeeded(options.parseFromString("colour=")));
  EXPECT_EQ(options.colour, Colour::Unset);
}

TEST(EnumOptionTest, RejectsUnknownValuesListingTheValidOnes) {
  ColourOptions options;
  // The option parser reports on llvm::errs().
  testing::internal::CaptureStderr();
  EXPECT_TRUE(mlir::failed(options.parseFromString("colour=blue")));
  std::string errors = testing::internal::GetCapturedStderr();
  EXPECT_NE(errors.find("for the --colour option: unknown colour 'blue' "
                        "(expected red or green)"),
            std::string::npos)
      << errors;
  EXPECT_EQ(options.colour, Colour::Unset);
  EXPECT_EQ(options.colour.getParser().getExpectedValues(), "red or green");
}

} // namespace
