// Host-tensor evaluation used by the folders: conversions and index maths.
#include "cuts/Dialect/Cuts/ConstEval.h"
#include "cuts/Dialect/Cuts/CutsDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/APFloat.h"

using namespace cuts;

TEST_CASE("broadcastShapes follows numpy", "[consteval]") {
  auto s = broadcastShapes({2, 1, 4}, {3, 1});
  REQUIRE(s);
  CHECK(std::vector<int64_t>(s->begin(), s->end()) ==
        std::vector<int64_t>{2, 3, 4});
  CHECK(!broadcastShapes({2, 3}, {4, 3}));
  auto scalar = broadcastShapes({}, {5});
  REQUIRE(scalar);
  CHECK(scalar->size() == 1);
  auto empty = broadcastShapes({0, 3}, {1, 3});
  REQUIRE(empty);
  CHECK((*empty)[0] == 0);
}

TEST_CASE("broadcastOffset maps result positions to operand positions",
          "[consteval]") {
  // to = [2,3], from = [3]: row index ignored.
  CHECK(broadcastOffset(4, {2, 3}, {3}) == 1);
  // from = [2,1]: column index ignored.
  CHECK(broadcastOffset(5, {2, 3}, {2, 1}) == 1);
  CHECK(broadcastOffset(5, {2, 3}, {}) == 0);
  CHECK(broadcastOffset(5, {2, 3}, {2, 3}) == 5);
}

TEST_CASE("stridesOf is row-major", "[consteval]") {
  auto s = stridesOf({2, 3, 4});
  CHECK(std::vector<int64_t>(s.begin(), s.end()) ==
        std::vector<int64_t>{12, 4, 1});
}

TEST_CASE("roundToType rounds to the element type", "[consteval]") {
  mlir::MLIRContext ctx;
  mlir::Builder b(&ctx);
  CHECK(roundToType(b.getF32Type(), 0.1) == double(0.1f));
  CHECK(roundToType(b.getF64Type(), 0.1) == 0.1);
  CHECK(roundToType(b.getF16Type(), 1.0 + 1.0 / 4096) == 1.0); // below f16 ulp
  CHECK(roundToType(b.getIntegerType(8), 130.0) == -126.0);    // wraps
  CHECK(roundToType(b.getIntegerType(8, false), 300.0) == 44.0);
  CHECK(roundToType(b.getIntegerType(32), -2.7) == -2.0); // truncates
  CHECK(roundToType(b.getI1Type(), 0.5) == 1.0);
  CHECK(roundToType(b.getIntegerType(64), NAN) == 0.0);
}

TEST_CASE("toAttr and toHost round-trip inline and resource tensors",
          "[consteval]") {
  mlir::MLIRContext ctx;
  ctx.loadDialect<CutsDialect>();
  mlir::Builder b(&ctx);
  for (int64_t n : {int64_t(3), int64_t(100)}) {
    for (mlir::Type et :
         {mlir::Type(b.getF32Type()), mlir::Type(b.getF16Type()),
          mlir::Type(b.getIntegerType(64)), mlir::Type(b.getIntegerType(8)),
          mlir::Type(b.getI1Type())}) {
      HostTensor t(mlir::RankedTensorType::get({n}, et));
      for (int64_t k = 0; k < n; ++k)
        t.set(k, double((k * 7) % 5) - 2.0);
      mlir::ElementsAttr attr = toAttr(t);
      // Large, non-splat tensors become resource blobs, small ones inline.
      CHECK(llvm::isa<mlir::DenseResourceElementsAttr>(attr) ==
            (n > kMaxInlineElements));
      auto back = toHost(attr);
      REQUIRE(back);
      CHECK(back->type == t.type);
      for (int64_t k = 0; k < n; ++k)
        CHECK(back->getF(k) == t.getF(k));
    }
  }
}

TEST_CASE("splat tensors stay inline whatever their size", "[consteval]") {
  mlir::MLIRContext ctx;
  mlir::Builder b(&ctx);
  HostTensor t(mlir::RankedTensorType::get({1000}, b.getF32Type()));
  for (int64_t k = 0; k < 1000; ++k)
    t.set(k, 1.5);
  auto attr = toAttr(t);
  auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(attr);
  REQUIRE(dense);
  CHECK(dense.isSplat());
  auto back = toHost(attr);
  REQUIRE(back);
  CHECK(back->f[999] == 1.5);
}

TEST_CASE("toHost rejects what it cannot read", "[consteval]") {
  mlir::MLIRContext ctx;
  mlir::Builder b(&ctx);
  CHECK(!toHost(mlir::Attribute()));
  CHECK(!toHost(b.getI64IntegerAttr(3)));
}

TEST_CASE("fp16 and bf16 constants round, encode and decode as APFloat does",
          "[consteval]") {
  mlir::MLIRContext ctx;
  ctx.loadDialect<CutsDialect>();
  mlir::Builder b(&ctx);
  for (mlir::FloatType t : {b.getF16Type(), b.getBF16Type()}) {
    const auto &sem = t.getFloatSemantics();
    const unsigned w = t.getWidth();
    // Every finite bit pattern: decoded by APFloat, written by toAttr as a
    // resource blob, read back by toHost.
    std::vector<uint16_t> patterns;
    std::vector<double> values;
    for (uint32_t bits = 0; bits < 65536; ++bits) {
      llvm::APFloat x(sem, llvm::APInt(w, bits));
      if (!x.isFinite())
        continue;
      bool lost;
      x.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
                &lost);
      patterns.push_back(uint16_t(bits));
      values.push_back(x.convertToDouble());
    }
    auto type = mlir::RankedTensorType::get({int64_t(values.size())}, t);
    HostTensor h(type);
    h.f = values;
    auto attr = llvm::dyn_cast<mlir::DenseResourceElementsAttr>(toAttr(h));
    REQUIRE(attr);
    llvm::ArrayRef<char> raw = attr.getRawHandle().getBlob()->getData();
    REQUIRE(raw.size() == 2 * patterns.size());
    size_t wrong = 0;
    for (size_t i = 0; i < patterns.size(); ++i) {
      uint16_t got;
      std::memcpy(&got, raw.data() + 2 * i, 2);
      // -0 and +0 both stay as written.
      wrong += got != patterns[i];
    }
    CHECK(wrong == 0);
    auto back = toHost(attr);
    REQUIRE(back);
    CHECK(back->f == values);
    // Rounding: random doubles across the range, subnormals, ties and
    // overflow, against APFloat's round to nearest even.
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> mant(1.0, 2.0);
    std::uniform_int_distribution<int> exp(-140, 140);
    size_t differ = 0;
    for (int i = 0; i < 200000; ++i) {
      double v = std::ldexp(mant(rng), exp(rng)) * (i % 2 ? -1 : 1);
      if (i % 7 == 0) // a tie between two neighbours
        v = (values[size_t(i) % values.size()] +
             values[(size_t(i) + 1) % values.size()]) /
            2;
      llvm::APFloat x(v);
      bool lost;
      x.convert(sem, llvm::APFloat::rmNearestTiesToEven, &lost);
      x.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
                &lost);
      double want = x.convertToDouble(), got = roundToType(t, v);
      differ += !(got == want || (std::isnan(got) && std::isnan(want)));
    }
    CHECK(differ == 0);
  }
}
