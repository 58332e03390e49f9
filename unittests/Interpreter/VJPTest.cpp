//===- VJPTest.cpp - Finite-difference checks of every VJP ------*- C++ -*-===//
//
// For every differentiable nn op: a tiny function `@f` of the op on random
// shapes (broadcasting included), written as MLIR text; buildBackwardFunction
// builds `@f_bwd`; the interpreter runs both; the gradients are checked
// against central differences of the forward.
//
// Method (float32 throughout, the kernels the pipeline runs): random seeds
// v (one per float result) and, for each float argument or parameter x, a
// random direction u. The backward gives g = d<v, f>/dx. With x+ = x + h*u
// and x- = x - h*u rounded to f32 and d = x+ - x- (exact), the forward gives
//   fd = <v, f(x+)> - <v, f(x-)>       (projections summed in double)
//   ad = <g, d>
// and the check is |fd - ad| - r <= tol * max(|ad|, |fd|, 1e-3 |g| |d|),
// tol = 1e-2, h = 1e-2, where r = 4 * 2^-24 * sum |v * f(x+-)| allows two
// ulps of f32 rounding in each output (the reported error is the part r
// does not explain). Inputs are O(1) and kept 0.1 away
// from kinks and poles; seeds and directions have entries of magnitude
// [0.5, 1]. Using the rounded d removes the perturbation's rounding; what is
// left is the O(h^2) truncation (~1e-4 relative) and the f32 rounding of
// the forward divided by 2h (~1e-5 * sqrt(n)). The worst error of each op is
// printed. Every module must verify after the backward is built.
//
//===----------------------------------------------------------------------===//

#include "gpipe/Dialect/NN/IR/NNDialect.h"
#include "gpipe/Dialect/NN/KernelCalls/KernelCalls.h"
#include "gpipe/Dialect/NN/Transforms/Transforms.h"
#include "gpipe/Interpreter/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace mlir;
using namespace mlir::gpipe;

namespace {

using Shape = std::vector<int64_t>;

constexpr double kStep = 1e-2;
constexpr double kTolerance = 1e-2;

std::string typeOf(const Shape &shape, const char *element = "f32") {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + element + ">";
}

std::string arrayOf(const Shape &values) {
  std::string s = "array<i64";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? ", " : ": ") + std::to_string(values[i]);
  return s + ">";
}

/// `v` as an MLIR float literal.
std::string floatText(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.6e", v);
  return buffer;
}

int64_t numel(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

Shape broadcast(const Shape &a, const Shape &b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t da = i + a.size() >= out.size() ? a[i + a.size() - out.size()] : 1;
    int64_t db = i + b.size() >= out.size() ? b[i + b.size() - out.size()] : 1;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

/// How to draw the values of one argument.
struct ArgGen {
  /// Floats: uniform on [lo, hi]; with `awayFromZero`, |x| >= 0.1 too.
  float lo = -1.0f, hi = 1.0f;
  bool awayFromZero = false;
  /// Integers: uniform on [0, bound).
  int64_t bound = 2;
};

ArgGen positive() { return ArgGen{0.5f, 2.0f}; }
ArgGen indices(int64_t bound) {
  ArgGen g;
  g.bound = bound;
  return g;
}

/// The worst errors seen per op (raw, and beyond the rounding allowance),
/// printed at the end of each test.
struct Worst {
  double raw = 0, beyondRounding = 0;
};
std::map<std::string, Worst> &worstErrors() {
  static std::map<std::string, Worst> errors;
  return errors;
}

class VJPTest : public ::testing::Test {
protected:
  void SetUp() override {
    DialectRegistry registry;
    registry.insert<nn::NNDialect, func::FuncDialect>();
    registerKernelCallExternalModels(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    context.printOpOnDiagnostic(false);
    handler.emplace(&context, [](Diagnostic &diag) {
      ADD_FAILURE() << diag.str();
      return success();
    });
  }

  HostTensor draw(RankedTensorType type, const ArgGen &gen) {
    Type element = type.getElementType();
    int64_t n = type.getNumElements();
    if (element.isF32()) {
      std::uniform_real_distribution<float> dist(gen.lo, gen.hi);
      std::vector<float> values(static_cast<size_t>(n));
      for (float &v : values) {
        v = dist(rng);
        if (gen.awayFromZero)
          v = std::copysign(0.1f + 0.9f * std::abs(v), v);
      }
      return HostTensor::fromF32(type.getShape(), values);
    }
    if (element.isInteger(1)) {
      std::vector<uint8_t> values(static_cast<size_t>(n));
      for (uint8_t &v : values)
        v = uint8_t(rng() & 1);
      return HostTensor::fromBool(type.getShape(), values);
    }
    std::vector<int64_t> values(static_cast<size_t>(n));
    for (int64_t &v : values)
      v = int64_t(rng() % uint64_t(gen.bound));
    return HostTensor::fromI64(type.getShape(), values);
  }

  /// Seeds and directions: magnitudes in [0.5, 1], random signs (no
  /// near-zero entries that would leave a one-element check to rounding).
  HostTensor randomLike(const HostTensor &t) {
    std::uniform_real_distribution<float> dist(0.5f, 1.0f);
    std::vector<float> values(static_cast<size_t>(t.getNumElements()));
    for (float &v : values)
      v = (rng() & 1) ? dist(rng) : -dist(rng);
    return HostTensor::fromF32(t.getShape(), values);
  }

  static double dot(llvm::ArrayRef<float> a, llvm::ArrayRef<float> b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i)
      s += double(a[i]) * double(b[i]);
    return s;
  }

  /// <seeds, f(args)> with parameters `params`, and sum |seed * f| (what
  /// the f32 rounding of the outputs is relative to).
  struct Projection {
    double value = 0, magnitude = 0;
  };
  std::optional<Projection> project(func::FuncOp f,
                                    llvm::ArrayRef<HostTensor> args,
                                    const ParameterStore &params,
                                    llvm::ArrayRef<HostTensor> seeds,
                                    llvm::ArrayRef<unsigned> seeded) {
    FailureOr<std::vector<HostTensor>> y = interpretFunction(f, args, params);
    if (failed(y))
      return std::nullopt;
    Projection p;
    for (auto [k, i] : llvm::enumerate(seeded)) {
      llvm::ArrayRef<float> out = (*y)[i].getF32(), v = seeds[k].getF32();
      p.value += dot(out, v);
      for (size_t j = 0; j < out.size(); ++j)
        p.magnitude += std::abs(double(out[j]) * double(v[j]));
    }
    return p;
  }

  /// One directional check of `grad` (the gradient of x) with x+ and x-.
  double compare(const std::string &what, const HostTensor &grad,
                 const HostTensor &plus, const HostTensor &minus,
                 const Projection &fPlus, const Projection &fMinus) {
    llvm::ArrayRef<float> g = grad.getF32(), p = plus.getF32(),
                          m = minus.getF32();
    double ad = 0, gNorm = 0, dNorm = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      double d = double(p[i]) - double(m[i]);
      ad += double(g[i]) * d;
      gNorm += double(g[i]) * g[i];
      dNorm += d * d;
    }
    double fd = fPlus.value - fMinus.value;
    double scale = std::max({std::abs(ad), std::abs(fd),
                             1e-3 * std::sqrt(gNorm) * std::sqrt(dNorm)});
    // The forward's outputs carry f32 rounding (allow two ulps each); a
    // difference below that says nothing.
    double rounding =
        4 * std::ldexp(1.0, -24) * (fPlus.magnitude + fMinus.magnitude);
    double err = scale > 0 ? std::abs(fd - ad) / scale : 0.0;
    double noise = scale > 0 ? rounding / scale : 0.0;
    EXPECT_LE(err, kTolerance + noise)
        << what << ": finite difference " << fd << " vs gradient " << ad
        << " (rounding allowance " << rounding << ")";
    current.raw = std::max(current.raw, err);
    current.beyondRounding =
        std::max(current.beyondRounding, std::max(0.0, err - noise));
    return err;
  }

  /// Builds @f_bwd for @f of `source` and checks every float argument and
  /// parameter gradient in `trials` random directions. Returns the worst
  /// relative error and records it under `op`.
  double check(const std::string &op, const std::string &source,
               std::vector<ArgGen> gens = {}, int trials = 2) {
    SCOPED_TRACE(source);
    OwningOpRef<ModuleOp> module =
        parseSourceString<ModuleOp>(source, &context, "vjp.mlir");
    if (!module) {
      ADD_FAILURE() << "does not parse";
      return INFINITY;
    }
    auto f = module->lookupSymbol<func::FuncOp>("f");
    FailureOr<func::FuncOp> bwd = nn::buildBackwardFunction(f, "f_bwd");
    if (failed(bwd) || failed(verify(*module))) {
      ADD_FAILURE() << "backward not built or invalid";
      return INFINITY;
    }
    FailureOr<ParameterStore> params = ParameterStore::fromModule(*module, 7);
    if (failed(params))
      return INFINITY;

    FunctionType type = f.getFunctionType();
    std::vector<HostTensor> args;
    for (auto [i, input] : llvm::enumerate(type.getInputs()))
      args.push_back(draw(cast<RankedTensorType>(input),
                          i < gens.size() ? gens[i] : ArgGen()));
    FailureOr<std::vector<HostTensor>> y = interpretFunction(f, args, *params);
    if (failed(y))
      return INFINITY;
    std::vector<HostTensor> seeds;
    std::vector<unsigned> seeded;
    for (auto [i, result] : llvm::enumerate(*y)) {
      if (result.getDType() != GPIPE_RT_F32)
        continue;
      seeded.push_back(unsigned(i));
      seeds.push_back(randomLike(result));
    }
    std::vector<HostTensor> bwdArgs = args;
    bwdArgs.insert(bwdArgs.end(), seeds.begin(), seeds.end());
    FailureOr<std::vector<HostTensor>> grads =
        interpretFunction(*bwd, bwdArgs, *params);
    if (failed(grads))
      return INFINITY;

    auto inputs =
        (*bwd)->getAttrOfType<DenseI64ArrayAttr>(nn::kInputGradsAttrName);
    auto names = (*bwd)->getAttrOfType<ArrayAttr>(nn::kParamGradsAttrName);
    EXPECT_EQ(grads->size(), inputs.size() + names.size());
    double worst = 0;
    auto perturb = [&](const HostTensor &x, double sign, const HostTensor &u) {
      std::vector<float> values(x.getF32().begin(), x.getF32().end());
      for (size_t i = 0; i < values.size(); ++i)
        values[i] = float(double(values[i]) + sign * kStep * u.getF32()[i]);
      return HostTensor::fromF32(x.getShape(), values);
    };
    for (int trial = 0; trial < trials; ++trial) {
      // Arguments.
      for (auto [k, position] : llvm::enumerate(inputs.asArrayRef())) {
        const HostTensor &x = args[size_t(position)];
        HostTensor u = randomLike(x);
        std::vector<HostTensor> plus = args, minus = args;
        plus[size_t(position)] = perturb(x, 1, u);
        minus[size_t(position)] = perturb(x, -1, u);
        std::optional<Projection> fp = project(f, plus, *params, seeds, seeded);
        std::optional<Projection> fm =
            project(f, minus, *params, seeds, seeded);
        if (!fp || !fm)
          return INFINITY;
        worst = std::max(worst, compare("argument " + std::to_string(position),
                                        (*grads)[k], plus[size_t(position)],
                                        minus[size_t(position)], *fp, *fm));
      }
      // Parameters.
      for (auto [k, attr] : llvm::enumerate(names)) {
        std::string name = cast<FlatSymbolRefAttr>(attr).getValue().str();
        HostTensor x = *params->lookup(name);
        HostTensor u = randomLike(x);
        HostTensor xp = perturb(x, 1, u), xm = perturb(x, -1, u);
        params->set(name, xp);
        std::optional<Projection> fp = project(f, args, *params, seeds, seeded);
        params->set(name, xm);
        std::optional<Projection> fm = project(f, args, *params, seeds, seeded);
        params->set(name, x);
        if (!fp || !fm)
          return INFINITY;
        worst = std::max(worst, compare("parameter @" + name,
                                        (*grads)[inputs.size() + k], xp, xm,
                                        *fp, *fm));
      }
    }
    Worst &record = worstErrors()[op];
    record.raw = std::max(record.raw, current.raw);
    record.beyondRounding =
        std::max(record.beyondRounding, current.beyondRounding);
    current = Worst();
    return worst;
  }

  void TearDown() override {
    for (auto &[op, err] : worstErrors())
      std::printf("[ vjp      ] %-14s worst relative error %.3g (%.3g beyond "
                  "f32 rounding)\n",
                  op.c_str(), err.raw, err.beyondRounding);
    worstErrors().clear();
  }

  /// A random shape of rank [minRank, maxRank] with dims in [1, maxDim].
  Shape randomShape(int minRank, int maxRank, int64_t maxDim = 4) {
    int rank = minRank + int(rng() % uint32_t(maxRank - minRank + 1));
    Shape s(static_cast<size_t>(rank));
    for (int64_t &d : s)
      d = 1 + int64_t(rng() % uint64_t(maxDim));
    return s;
  }

  /// `out` with some leading dims dropped and some dims set to 1: an
  /// operand that broadcasts to it.
  Shape broadcastOperand(const Shape &out) {
    size_t drop = out.empty() ? 0 : rng() % (out.size() + 1);
    Shape s(out.begin() + drop, out.end());
    for (int64_t &d : s)
      if (rng() % 3 == 0)
        d = 1;
    return s;
  }

  /// The worst errors of the current check.
  Worst current;
  std::mt19937 rng{1234};
  MLIRContext context{MLIRContext::Threading::DISABLED};
  std::optional<ScopedDiagnosticHandler> handler;
};

/// A function of one op with numpy-broadcast operands.
std::string binaryFunc(const std::string &op, const Shape &a, const Shape &b) {
  Shape out = broadcast(a, b);
  std::ostringstream os;
  os << "func.func @f(%a: " << typeOf(a) << ", %b: " << typeOf(b) << ") -> "
     << typeOf(out) << " {\n  %r = nn." << op << " %a, %b : (" << typeOf(a)
     << ", " << typeOf(b) << ") -> " << typeOf(out)
     << "\n  return %r : " << typeOf(out) << "\n}\n";
  return os.str();
}

std::string unaryFunc(const std::string &op, const Shape &s) {
  std::string t = typeOf(s);
  return "func.func @f(%a: " + t + ") -> " + t + " {\n  %r = nn." + op +
         " %a : " + t + "\n  return %r : " + t + "\n}\n";
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

TEST_F(VJPTest, BinaryOpsWithBroadcasting) {
  for (const char *op : {"add", "sub", "mul", "div", "pow", "max", "min"}) {
    for (int i = 0; i < 6; ++i) {
      Shape out = randomShape(0, 4);
      Shape a = broadcastOperand(out), b = broadcastOperand(out);
      if (i % 2)
        std::swap(a, b);
      std::string name = op;
      std::vector<ArgGen> gens;
      if (name == "div")
        gens = {ArgGen(), positive()};
      if (name == "pow")
        gens = {positive(), ArgGen{-1.5f, 1.5f}};
      // Apart, so finite differences never straddle the kink; each
      // operand wins in turn.
      if (name == "max" || name == "min")
        gens =
            i % 2
                ? std::vector<ArgGen>{ArgGen{1.0f, 2.0f}, ArgGen{-2.0f, -1.0f}}
                : std::vector<ArgGen>{ArgGen{-2.0f, -1.0f}, ArgGen{1.0f, 2.0f}};
      check(op, binaryFunc(op, a, b), gens);
    }
  }
}

// The remainders: dr/da = 1, dr/db = -q. The operands keep a / b inside
// (2, 3) or (-3, -2), away from the jumps at integers, so q is 2 or 3
// (remainder) and 2 (fmod) in turn, with either operand broadcast.
TEST_F(VJPTest, RemaindersWithBroadcasting) {
  for (const char *op : {"remainder", "fmod"}) {
    for (int i = 0; i < 4; ++i) {
      Shape out = randomShape(0, 3);
      Shape a = broadcastOperand(out), b = broadcastOperand(out);
      ArgGen dividend = i % 2 ? ArgGen{-2.8f, -2.2f} : ArgGen{2.2f, 2.8f};
      check(op, binaryFunc(op, a, b), {dividend, ArgGen{1.0f, 1.05f}});
    }
  }
}

// Floor, ceil and round pass no gradient; off the integers their finite
// differences are 0 too.
TEST_F(VJPTest, RoundingOpsHaveNoGradient) {
  for (const char *op : {"floor", "ceil", "round"})
    check(op, unaryFunc(op, randomShape(1, 3)), {ArgGen{0.1f, 0.4f}});
}

TEST_F(VJPTest, UnaryOps) {
  struct Unary {
    const char *op;
    ArgGen gen;
  };
  ArgGen away;
  away.awayFromZero = true;
  for (const Unary &u :
       {Unary{"neg", ArgGen()}, Unary{"reciprocal", positive()},
        Unary{"sqrt", positive()}, Unary{"exp", ArgGen()},
        Unary{"log", positive()}, Unary{"erf", ArgGen{-2.0f, 2.0f}},
        Unary{"tanh", ArgGen{-2.0f, 2.0f}},
        Unary{"sigmoid", ArgGen{-3.0f, 3.0f}}, Unary{"relu", away},
        Unary{"gelu", ArgGen{-3.0f, 3.0f}}, Unary{"sin", ArgGen{-3.0f, 3.0f}},
        Unary{"cos", ArgGen{-3.0f, 3.0f}}}) {
    for (int i = 0; i < 3; ++i)
      check(u.op, unaryFunc(u.op, randomShape(0, 3)), {u.gen});
  }
  // A negative reciprocal too.
  check("reciprocal", unaryFunc("reciprocal", {3, 2}), {ArgGen{-2.0f, -0.5f}});
}

// ReLU6 and a one-sided clip; the inputs straddle the bounds (finite
// differences stay away from the kinks: the step is far below the gap).
TEST_F(VJPTest, ClipBothBoundsAndOneSided) {
  for (const char *bounds :
       {"{max = 6.000000e+00 : f32, min = 0.000000e+00 : f32}",
        "{max = 5.000000e-01 : f32, min = -5.000000e-01 : f32}",
        "{max = 0x7F800000 : f32, min = 2.500000e-01 : f32}"}) {
    for (const Shape &s : {Shape{7}, Shape{3, 4}}) {
      std::string t = typeOf(s);
      check("clip",
            "func.func @f(%a: " + t + ") -> " + t + " {\n  %r = nn.clip %a " +
                bounds + " : " + t + "\n  return %r : " + t + "\n}\n",
            {ArgGen{-8.0f, 8.0f}});
    }
  }
}

// Repeating along new leading dims and size-1 dims; the gradient sums the
// copies.
TEST_F(VJPTest, BroadcastToLeadingAndUnitDims) {
  for (auto [in, out] : {std::pair<Shape, Shape>{{1, 3}, {4, 3}},
                         {{3}, {2, 5, 3}},
                         {{2, 1, 4}, {3, 2, 6, 4}},
                         {{}, {2, 2}}}) {
    std::string ti = typeOf(in), to = typeOf(out);
    check("broadcast_to", "func.func @f(%a: " + ti + ") -> " + to +
                              " {\n  %r = nn.broadcast_to %a : " + ti + " -> " +
                              to + "\n  %m = nn.mul %r, %r : (" + to + ", " +
                              to + ") -> " + to + "\n  return %m : " + to +
                              "\n}\n");
  }
}

TEST_F(VJPTest, WhereBroadcastsAllThreeOperands) {
  for (int i = 0; i < 6; ++i) {
    Shape out = randomShape(1, 4);
    Shape c = broadcastOperand(out), x = broadcastOperand(out),
          y = broadcastOperand(out);
    Shape r = broadcast(broadcast(c, x), y);
    std::ostringstream os;
    os << "func.func @f(%c: " << typeOf(c, "i1") << ", %x: " << typeOf(x)
       << ", %y: " << typeOf(y) << ") -> " << typeOf(r) << " {\n"
       << "  %r = nn.where %c, %x, %y : (" << typeOf(c, "i1") << ", "
       << typeOf(x) << ", " << typeOf(y) << ") -> " << typeOf(r) << "\n"
       << "  return %r : " << typeOf(r) << "\n}\n";
    check("where", os.str());
  }
}

TEST_F(VJPTest, CastBetweenFloatTypes) {
  for (const Shape &s : {Shape{}, Shape{3}, Shape{2, 5}}) {
    std::string t32 = typeOf(s), t64 = typeOf(s, "f64");
    std::string source = "func.func @f(%a: " + t32 + ") -> " + t32 +
                         " {\n"
                         "  %d = nn.cast %a : " +
                         t32 + " -> " + t64 +
                         "\n"
                         "  %e = nn.cast %d : " +
                         t64 + " -> " + t32 +
                         "\n"
                         "  %r = nn.mul %e, %a : (" +
                         t32 + ", " + t32 + ") -> " + t32 +
                         "\n"
                         "  return %r : " +
                         t32 + "\n}\n";
    check("cast", source);
  }
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

TEST_F(VJPTest, MatmulBatchedAndBroadcast) {
  struct Case {
    Shape a, b;
  };
  for (const Case &c : {Case{{3, 4}, {4, 5}}, Case{{2, 3, 4}, {4, 5}},
                        Case{{2, 1, 3, 4}, {3, 4, 2}}, Case{{3, 4}, {2, 4, 5}},
                        Case{{2, 3, 4}, {2, 4, 5}}, Case{{1, 3, 4}, {2, 4, 1}},
                        Case{{2, 2, 3, 4}, {4, 2}}}) {
    Shape batch = broadcast(Shape(c.a.begin(), c.a.end() - 2),
                            Shape(c.b.begin(), c.b.end() - 2));
    Shape out = batch;
    out.push_back(c.a[c.a.size() - 2]);
    out.push_back(c.b.back());
    // Every transpose flag: the operand stored with its last two dims
    // swapped (a 2-D transposed weight takes the flattened-GEMM path, a
    // transposed left operand the batched one).
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        Shape a = c.a, b = c.b;
        if (ta)
          std::swap(a[a.size() - 2], a[a.size() - 1]);
        if (tb)
          std::swap(b[b.size() - 2], b[b.size() - 1]);
        std::ostringstream os;
        os << "func.func @f(%a: " << typeOf(a) << ", %b: " << typeOf(b)
           << ") -> " << typeOf(out) << " {\n  %r = nn.matmul %a, %b {"
           << "trans_lhs = " << (ta ? "true" : "false")
           << ", trans_rhs = " << (tb ? "true" : "false") << "} : ("
           << typeOf(a) << ", " << typeOf(b) << ") -> " << typeOf(out)
           << "\n  return %r : " << typeOf(out) << "\n}\n";
        check("matmul", os.str());
      }
  }
}

TEST_F(VJPTest, GemmEveryTransposeAlphaBetaAndAddend) {
  const int64_t m = 3, n = 4, k = 5;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb)
      for (float alpha : {1.0f, 0.75f})
        for (float beta : {1.0f, -1.5f})
          for (const std::optional<Shape> &c :
               {std::optional<Shape>(), std::optional<Shape>(Shape{}),
                std::optional<Shape>(Shape{n}),
                std::optional<Shape>(Shape{m, 1}),
                std::optional<Shape>(Shape{m, n})}) {
            Shape a = ta ? Shape{k, m} : Shape{m, k};
            Shape b = tb ? Shape{n, k} : Shape{k, n};
            Shape out{m, n};
            std::ostringstream os;
            os << "func.func @f(%a: " << typeOf(a) << ", %b: " << typeOf(b);
            if (c)
              os << ", %c: " << typeOf(*c);
            os << ") -> " << typeOf(out) << " {\n  %r = nn.gemm %a, %b"
               << (c ? ", %c" : "") << " {alpha = " << floatText(alpha)
               << " : f32, beta = " << floatText(beta)
               << " : f32, trans_a = " << (ta ? "true" : "false")
               << ", trans_b = " << (tb ? "true" : "false") << "} : ("
               << typeOf(a) << ", " << typeOf(b);
            if (c)
              os << ", " << typeOf(*c);
            os << ") -> " << typeOf(out) << "\n  return %r : " << typeOf(out)
               << "\n}\n";
            check("gemm", os.str(), {}, 1);
          }
}

TEST_F(VJPTest, LinearBothLayoutsWithAndWithoutBias) {
  for (const Shape &in : {Shape{5}, Shape{3, 5}, Shape{2, 3, 5}})
    for (int transposed = 0; transposed < 2; ++transposed)
      for (int bias = 0; bias < 2; ++bias)
        for (int asParams = 0; asParams < 2; ++asParams) {
          Shape w = transposed ? Shape{4, 5} : Shape{5, 4};
          Shape out = in;
          out.back() = 4;
          std::ostringstream os;
          if (asParams) {
            os << "nn.parameter @w : " << typeOf(w) << " init uniform(1.0)\n";
            if (bias)
              os << "nn.parameter @bias : " << typeOf({4})
                 << " init normal(1.0)\n";
            os << "func.func @f(%x: " << typeOf(in) << ") -> " << typeOf(out)
               << " {\n  %w = nn.param @w : " << typeOf(w) << "\n";
            if (bias)
              os << "  %b = nn.param @bias : " << typeOf({4}) << "\n";
          } else {
            os << "func.func @f(%x: " << typeOf(in) << ", %w: " << typeOf(w);
            if (bias)
              os << ", %b: " << typeOf({4});
            os << ") -> " << typeOf(out) << " {\n";
          }
          os << "  %r = nn.linear %x, %w" << (bias ? ", %b" : "")
             << " {transpose_weight = " << (transposed ? "true" : "false")
             << "} : (" << typeOf(in) << ", " << typeOf(w)
             << (bias ? ", " + typeOf({4}) : "") << ") -> " << typeOf(out)
             << "\n  return %r : " << typeOf(out) << "\n}\n";
          check("linear", os.str());
        }
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

TEST_F(VJPTest, SoftmaxEveryAxis) {
  for (int i = 0; i < 6; ++i) {
    Shape s = randomShape(1, 3, 5);
    int64_t axis = int64_t(rng() % s.size());
    std::string t = typeOf(s);
    check("softmax",
          "func.func @f(%a: " + t + ") -> " + t +
              " {\n  %r = nn.softmax %a {axis = " + std::to_string(axis) +
              "} : " + t + " -> " + t + "\n  return %r : " + t + "\n}\n",
          {ArgGen{-2.0f, 2.0f}});
  }
}

TEST_F(VJPTest, LayerNormWithAndWithoutBias) {
  for (int i = 0; i < 6; ++i) {
    Shape s = randomShape(1, 3, 5);
    // At least three normalized elements: one has zero variance, and with
    // two the output is +-1 whatever the input (a zero gradient).
    s.back() = std::max<int64_t>(s.back(), 3);
    int64_t axis = int64_t(rng() % s.size());
    Shape normalized(s.begin() + axis, s.end());
    bool bias = i % 2;
    std::string t = typeOf(s), st = typeOf(normalized);
    std::ostringstream os;
    os << "func.func @f(%x: " << t << ", %g: " << st;
    if (bias)
      os << ", %b: " << st;
    os << ") -> " << t << " {\n  %r = nn.layer_norm %x, %g"
       << (bias ? ", %b" : "") << " {axis = " << axis
       << ", epsilon = 1.0e-05 : f32} : (" << t << ", " << st
       << (bias ? ", " + st : "") << ") -> " << t << "\n  return %r : " << t
       << "\n}\n";
    check("layer_norm", os.str(), {ArgGen{-2.0f, 2.0f}});
  }
}

//===----------------------------------------------------------------------===//
// Indexing and shapes
//===----------------------------------------------------------------------===//

TEST_F(VJPTest, GatherEveryAxisWithRepeatedIndices) {
  for (int i = 0; i < 6; ++i) {
    Shape data = randomShape(1, 3, 4);
    int64_t axis = int64_t(rng() % data.size());
    Shape ids = randomShape(0, 2, 5);
    Shape out(data.begin(), data.begin() + axis);
    out.insert(out.end(), ids.begin(), ids.end());
    out.insert(out.end(), data.begin() + axis + 1, data.end());
    std::ostringstream os;
    os << "func.func @f(%t: " << typeOf(data) << ", %i: " << typeOf(ids, "i64")
       << ") -> " << typeOf(out)
       << " {\n  %r = nn.gather %t, %i {axis = " << axis << "} : ("
       << typeOf(data) << ", " << typeOf(ids, "i64") << ") -> " << typeOf(out)
       << "\n  return %r : " << typeOf(out) << "\n}\n";
    check("gather", os.str(), {ArgGen(), indices(data[size_t(axis)])});
  }
}

TEST_F(VJPTest, ReshapeTransposeUnsqueeze) {
  for (int i = 0; i < 4; ++i) {
    Shape s = randomShape(1, 4);
    // Reshape to the flat shape and back through another factorization.
    Shape flat{numel(s)};
    std::string t = typeOf(s), tf = typeOf(flat);
    check("reshape", "func.func @f(%a: " + t + ") -> " + tf +
                         " {\n  %r = nn.reshape %a : " + t + " -> " + tf +
                         "\n  %m = nn.mul %r, %r : (" + tf + ", " + tf +
                         ") -> " + tf + "\n  return %m : " + tf + "\n}\n");
    // Transpose by a random permutation.
    Shape perm(s.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    Shape out(s.size());
    for (size_t d = 0; d < s.size(); ++d)
      out[d] = s[size_t(perm[d])];
    std::string to = typeOf(out);
    check("transpose",
          "func.func @f(%a: " + t + ") -> " + to +
              " {\n  %r = nn.transpose %a {perm = " + arrayOf(perm) +
              "} : " + t + " -> " + to + "\n  %m = nn.mul %r, %r : (" + to +
              ", " + to + ") -> " + to + "\n  return %m : " + to + "\n}\n");
    // Unsqueeze at sorted positions of the result.
    Shape axes{0, int64_t(s.size()) + 1};
    Shape un{1};
    un.insert(un.end(), s.begin(), s.end());
    un.push_back(1);
    std::string tu = typeOf(un);
    check("unsqueeze",
          "func.func @f(%a: " + t + ") -> " + tu +
              " {\n  %r = nn.unsqueeze %a {axes = " + arrayOf(axes) +
              "} : " + t + " -> " + tu + "\n  %m = nn.mul %r, %r : (" + tu +
              ", " + tu + ") -> " + tu + "\n  return %m : " + tu + "\n}\n");
  }
}

TEST_F(VJPTest, SplitSomePiecesUnused) {
  for (int i = 0; i < 4; ++i) {
    Shape s = randomShape(1, 3, 3);
    int64_t axis = int64_t(rng() % s.size());
    s[size_t(axis)] = 6;
    Shape sizes{1, 3, 2};
    std::string t = typeOf(s);
    std::vector<std::string> pieces;
    for (int64_t size : sizes) {
      Shape p = s;
      p[size_t(axis)] = size;
      pieces.push_back(typeOf(p));
    }
    // Piece 1 is dropped (its gradient is zeros); piece 2 is used twice.
    std::ostringstream os;
    os << "func.func @f(%a: " << t << ") -> (" << pieces[0] << ", " << pieces[2]
       << ") {\n  %p:3 = nn.split %a {axis = " << axis
       << ", sizes = " << arrayOf(sizes) << "} : " << t << " -> " << pieces[0]
       << ", " << pieces[1] << ", " << pieces[2] << "\n"
       << "  %m = nn.mul %p#2, %p#2 : (" << pieces[2] << ", " << pieces[2]
       << ") -> " << pieces[2] << "\n  return %p#0, %m : " << pieces[0] << ", "
       << pieces[2] << "\n}\n";
    check("split", os.str());
  }
}

TEST_F(VJPTest, StridedSlice) {
  struct Case {
    Shape in, offsets, sizes, strides;
  };
  for (const Case &c :
       {Case{{4, 6}, {1, 0}, {2, 3}, {2, 2}}, Case{{5}, {4}, {1}, {1}},
        Case{{3, 4, 5}, {0, 1, 0}, {3, 2, 2}, {1, 2, 3}},
        Case{{2, 7}, {0, 2}, {2, 5}, {1, 1}}}) {
    std::string t = typeOf(c.in), to = typeOf(c.sizes);
    check("slice", "func.func @f(%a: " + t + ") -> " + to +
                       " {\n  %r = nn.slice %a {offsets = " +
                       arrayOf(c.offsets) + ", sizes = " + arrayOf(c.sizes) +
                       ", strides = " + arrayOf(c.strides) + "} : " + t +
                       " -> " + to + "\n  %m = nn.mul %r, %r : (" + to + ", " +
                       to + ") -> " + to + "\n  return %m : " + to + "\n}\n");
  }
}

TEST_F(VJPTest, ConcatTwoAndThreeInputs) {
  for (int i = 0; i < 4; ++i) {
    Shape s = randomShape(1, 3, 3);
    int64_t axis = int64_t(rng() % s.size());
    int inputs = 2 + i % 2;
    std::vector<Shape> shapes;
    Shape out = s;
    out[size_t(axis)] = 0;
    for (int k = 0; k < inputs; ++k) {
      Shape p = s;
      p[size_t(axis)] = 1 + int64_t(rng() % 3);
      out[size_t(axis)] += p[size_t(axis)];
      shapes.push_back(p);
    }
    std::ostringstream os, types;
    os << "func.func @f(";
    for (int k = 0; k < inputs; ++k) {
      os << (k ? ", " : "") << "%a" << k << ": " << typeOf(shapes[size_t(k)]);
      types << (k ? ", " : "") << typeOf(shapes[size_t(k)]);
    }
    os << ") -> " << typeOf(out) << " {\n  %r = nn.concat ";
    for (int k = 0; k < inputs; ++k)
      os << (k ? ", " : "") << "%a" << k;
    os << " {axis = " << axis << "} : (" << types.str() << ") -> "
       << typeOf(out) << "\n  %m = nn.mul %r, %r : (" << typeOf(out) << ", "
       << typeOf(out) << ") -> " << typeOf(out)
       << "\n  return %m : " << typeOf(out) << "\n}\n";
    check("concat", os.str());
  }
}

TEST_F(VJPTest, ReduceSumAxesAndKeepDims) {
  for (int i = 0; i < 8; ++i) {
    Shape s = randomShape(1, 4);
    Shape axes;
    for (size_t d = 0; d < s.size(); ++d)
      if (rng() % 2)
        axes.push_back(int64_t(d));
    bool keep = i % 2;
    Shape out;
    for (size_t d = 0; d < s.size(); ++d) {
      bool reduced =
          std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end();
      if (!reduced)
        out.push_back(s[d]);
      else if (keep)
        out.push_back(1);
    }
    std::string t = typeOf(s), to = typeOf(out);
    check("reduce_sum",
          "func.func @f(%a: " + t + ") -> " + to +
              " {\n  %m = nn.mul %a, %a : (" + t + ", " + t + ") -> " + t +
              "\n  %r = nn.reduce_sum %m {axes = " + arrayOf(axes) +
              ", keep_dims = " + (keep ? "true" : "false") + "} : " + t +
              " -> " + to + "\n  return %r : " + to + "\n}\n");
  }
}

TEST_F(VJPTest, InsertSliceSourceAndDest) {
  struct Case {
    Shape dest, source, offsets, strides;
  };
  for (const Case &c :
       {Case{{4, 6}, {2, 3}, {1, 0}, {2, 2}}, Case{{5}, {2}, {3}, {1}},
        Case{{3, 4, 5}, {3, 2, 2}, {0, 1, 0}, {1, 2, 3}}}) {
    std::string td = typeOf(c.dest), ts = typeOf(c.source);
    check("insert_slice",
          "func.func @f(%s: " + ts + ", %d: " + td + ") -> " + td +
              " {\n  %r = nn.insert_slice %s into %d {offsets = " +
              arrayOf(c.offsets) + ", strides = " + arrayOf(c.strides) +
              "} : " + ts + " into " + td + "\n  %m = nn.mul %r, %r : (" + td +
              ", " + td + ") -> " + td + "\n  return %m : " + td + "\n}\n");
  }
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

TEST_F(VJPTest, CrossEntropyAndMSE) {
  for (const Shape &logits : {Shape{5}, Shape{4, 6}, Shape{2, 3, 7}}) {
    Shape labels(logits.begin(), logits.end() - 1);
    std::string tl = typeOf(logits), tb = typeOf(labels, "i64");
    check("cross_entropy",
          "func.func @f(%x: " + tl + ", %l: " + tb +
              ") -> tensor<f32> {\n  %r = nn.cross_entropy %x, %l : (" + tl +
              ", " + tb + ") -> tensor<f32>\n  return %r : tensor<f32>\n}\n",
          {ArgGen{-3.0f, 3.0f}, indices(logits.back())});
    std::string t = typeOf(logits);
    check("mse", "func.func @f(%x: " + t + ", %t: " + t +
                     ") -> tensor<f32> {\n  %r = nn.mse %x, %t : (" + t + ", " +
                     t + ") -> tensor<f32>\n  return %r : tensor<f32>\n}\n");
  }
}

/// A small network of several ops with shared values and a parameter read
/// twice: the accumulation of gradients over uses.
TEST_F(VJPTest, CompositionWithSharedValues) {
  check("composition", R"mlir(
    nn.parameter @w : tensor<6x6xf32> init uniform(0.5)
    nn.parameter @g : tensor<6xf32> init ones
    func.func @f(%x: tensor<2x3x6xf32>, %l: tensor<2x3xi64>) -> tensor<f32> {
      %w = nn.param @w : tensor<6x6xf32>
      %g = nn.param @g : tensor<6xf32>
      %h = nn.linear %x, %w : (tensor<2x3x6xf32>, tensor<6x6xf32>) -> tensor<2x3x6xf32>
      %a = nn.gelu %h : tensor<2x3x6xf32>
      %r = nn.add %a, %x : (tensor<2x3x6xf32>, tensor<2x3x6xf32>) -> tensor<2x3x6xf32>
      %n = nn.layer_norm %r, %g {axis = 2} : (tensor<2x3x6xf32>, tensor<6xf32>) -> tensor<2x3x6xf32>
      %w2 = nn.param @w : tensor<6x6xf32>
      %o = nn.linear %n, %w2 {transpose_weight = true} : (tensor<2x3x6xf32>, tensor<6x6xf32>) -> tensor<2x3x6xf32>
      %loss = nn.cross_entropy %o, %l : (tensor<2x3x6xf32>, tensor<2x3xi64>) -> tensor<f32>
      return %loss : tensor<f32>
    }
  )mlir",
        {ArgGen(), indices(6)});
}

} // namespace
