// The tensor files `cuts run` reads and writes (tools/support/TensorFile):
// .npy and ONNX TensorProto files of every dtype, and the conversions to a
// model input's dtype.
#include "tools/support/TensorFile.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace cuts;

namespace {

/// A version 1 .npy file as NumPy writes it.
std::string npy(const std::string &descr, const std::string &shape,
                const void *data, size_t bytes) {
  std::string h = "{'descr': '" + descr +
                  "', 'fortran_order': False, 'shape': " + shape + ", }";
  h += std::string((64 - (10 + h.size() + 1) % 64) % 64, ' ') + "\n";
  std::string f("\x93NUMPY\x01\x00", 8);
  f += char(h.size() & 0xff);
  f += char(h.size() >> 8);
  f += h;
  f.append(static_cast<const char *>(data), bytes);
  return f;
}

// Protobuf wire format, as onnx's TensorProto serialises.
std::string varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s += char(uint8_t(v) | 0x80);
    v >>= 7;
  }
  return s + char(v);
}
std::string field(int number, int wire) { return varint(number << 3 | wire); }
std::string bytesField(int number, const std::string &payload) {
  return field(number, 2) + varint(payload.size()) + payload;
}
std::string dims(std::vector<int64_t> d) {
  std::string s;
  for (int64_t x : d)
    s += field(1, 0) + varint(uint64_t(x));
  return s;
}
std::string dataType(int t) { return field(2, 0) + varint(uint64_t(t)); }
/// Packed varints (int32_data = 5, int64_data = 7), negative values as
/// 64-bit two's complement like protobuf.
std::string packed(int number, const std::vector<int64_t> &v) {
  std::string p;
  for (int64_t x : v)
    p += varint(uint64_t(x));
  return bytesField(number, p);
}

std::vector<int64_t> integers(const HostArray &a) {
  std::vector<int64_t> v;
  for (size_t i = 0; i < a.size(); ++i)
    v.push_back(a.integer(i));
  return v;
}

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          ("cuts-tensorfile-test-" + std::to_string(getpid()) + "-" + name))
      .string();
}

} // namespace

TEST_CASE(".npy files of every dtype keep it", "[tensorfile]") {
  std::string error;
  SECTION("int64 (input_ids)") {
    int64_t v[6] = {0, 1, 30521, -1, 7, 1ll << 40};
    auto a = parseNpy(npy("<i8", "(2, 3)", v, sizeof v), error);
    INFO(error);
    REQUIRE(a);
    CHECK(a->dtype == "int64");
    CHECK(a->shape == std::vector<int64_t>{2, 3});
    CHECK(integers(*a) == std::vector<int64_t>(v, v + 6));
    CHECK_FALSE(a->isFloat());
  }
  SECTION("int32") {
    int32_t v[3] = {5, -2, 2147483647};
    auto a = parseNpy(npy("<i4", "(3,)", v, sizeof v), error);
    REQUIRE(a);
    CHECK(a->dtype == "int32");
    CHECK(integers(*a) == std::vector<int64_t>{5, -2, 2147483647});
  }
  SECTION("bool (a mask)") {
    uint8_t v[4] = {1, 1, 0, 1};
    auto a = parseNpy(npy("|b1", "(1, 4)", v, sizeof v), error);
    REQUIRE(a);
    CHECK(a->dtype == "bool");
    CHECK(a->bytes == std::vector<uint8_t>(v, v + 4));
  }
  SECTION("float64 and float32") {
    double d[2] = {0.1, -3};
    auto a = parseNpy(npy("<f8", "(2,)", d, sizeof d), error);
    REQUIRE(a);
    CHECK(a->dtype == "float64");
    CHECK(a->value(0) == 0.1);
    float f[1] = {2.5f};
    auto b = parseNpy(npy("<f4", "()", f, sizeof f), error);
    REQUIRE(b);
    CHECK(b->shape.empty());
    CHECK(b->value(0) == 2.5);
  }
  SECTION("unsupported and truncated") {
    int64_t v[2] = {1, 2};
    CHECK_FALSE(parseNpy(npy(">i8", "(2,)", v, sizeof v), error));
    CHECK(error.find(">i8") != std::string::npos);
    CHECK_FALSE(parseNpy(npy("<u8", "(2,)", v, sizeof v), error));
    CHECK_FALSE(parseNpy(npy("<i8", "(3,)", v, sizeof v), error));
    CHECK(error.find("truncated") != std::string::npos);
    CHECK_FALSE(parseNpy(npy("<i8", "(L,)", v, sizeof v), error));
    CHECK(error.find("bad .npy shape") != std::string::npos);
  }
}

TEST_CASE(".npy files are written in the output's dtype", "[tensorfile]") {
  std::string error;
  for (const char *dtype : {"int64", "bool", "int32", "float32", "float64"}) {
    INFO(dtype);
    HostArray a = HostArray::fromDoubles(
        {2, 2}, dtype, {0, 1, 1, dtype[0] == 'b' ? 1.0 : 3.0});
    std::string path = tempPath(std::string(dtype) + ".npy");
    REQUIRE(writeNpy(path, a, error));
    auto b = readTensorFile(path, error);
    std::filesystem::remove(path);
    REQUIRE(b);
    CHECK(b->dtype == dtype);
    CHECK(b->shape == a.shape);
    CHECK(b->bytes == a.bytes);
  }
  // bfloat16, which NumPy lacks, as float32.
  HostArray bf = HostArray::fromDoubles({3}, "bfloat16", {1.5, -2, 0.25});
  std::string path = tempPath("bf16.npy");
  REQUIRE(writeNpy(path, bf, error));
  auto b = readTensorFile(path, error);
  std::filesystem::remove(path);
  REQUIRE(b);
  CHECK(b->dtype == "float32");
  CHECK((b->value(0) == 1.5 && b->value(1) == -2 && b->value(2) == 0.25));
}

TEST_CASE("TensorProto files of integer and bool types", "[tensorfile]") {
  std::string error;
  SECTION("int64_data, packed") {
    auto a = parseTensorProto(dims({2, 2}) + dataType(7) +
                                  packed(7, {101, -1, 0, 30521}) +
                                  bytesField(8, "input_ids"),
                              error);
    INFO(error);
    REQUIRE(a);
    CHECK(a->name == "input_ids");
    CHECK(a->dtype == "int64");
    CHECK(integers(*a) == std::vector<int64_t>{101, -1, 0, 30521});
  }
  SECTION("int64_data, not packed") {
    std::string p = dims({2}) + dataType(7);
    for (int64_t v : {3, 4})
      p += field(7, 0) + varint(uint64_t(v));
    auto a = parseTensorProto(p, error);
    REQUIRE(a);
    CHECK(integers(*a) == std::vector<int64_t>{3, 4});
  }
  SECTION("int32_data of INT32, negative values") {
    auto a = parseTensorProto(dims({3}) + dataType(6) + packed(5, {-7, 0, 9}),
                              error);
    REQUIRE(a);
    CHECK(a->dtype == "int32");
    CHECK(integers(*a) == std::vector<int64_t>{-7, 0, 9});
  }
  SECTION("int32_data of BOOL") {
    auto a = parseTensorProto(dims({1, 3}) + dataType(9) + packed(5, {1, 0, 1}),
                              error);
    REQUIRE(a);
    CHECK(a->dtype == "bool");
    CHECK(a->bytes == std::vector<uint8_t>{1, 0, 1});
  }
  SECTION("raw_data of INT64 and BOOL") {
    int64_t v[2] = {-5, 1ll << 50};
    auto a = parseTensorProto(
        dims({2}) + dataType(7) +
            bytesField(9, std::string(reinterpret_cast<char *>(v), 16)),
        error);
    REQUIRE(a);
    CHECK(integers(*a) == std::vector<int64_t>{-5, 1ll << 50});
    auto b = parseTensorProto(dims({2}) + dataType(9) +
                                  bytesField(9, std::string("\x01\x00", 2)),
                              error);
    REQUIRE(b);
    CHECK(b->bytes == std::vector<uint8_t>{1, 0});
  }
  SECTION("the wrong number of values") {
    CHECK_FALSE(
        parseTensorProto(dims({3}) + dataType(7) + packed(7, {1, 2}), error));
    CHECK(error == "TensorProto int64_data holds 2 values, the shape needs 3");
    CHECK_FALSE(parseTensorProto(
        dims({2}) + dataType(7) + bytesField(9, std::string(8, '\0')), error));
    CHECK(error.find("raw_data holds 8 bytes, the shape needs 16") !=
          std::string::npos);
    CHECK_FALSE(
        parseTensorProto(dims({1}) + dataType(8) + packed(5, {1}), error));
    CHECK(error.find("data type 8") != std::string::npos); // STRING
  }
}

TEST_CASE("conversions to an input's dtype are exact or refused",
          "[tensorfile]") {
  std::string error;
  HostArray ids = HostArray::fromDoubles({4}, "int32", {0, 5, 30521, -1});
  SECTION("int32 to int64") {
    auto a = convertArray(ids, "int64", error);
    REQUIRE(a);
    CHECK(a->dtype == "int64");
    CHECK(a->bytes.size() == 32);
    CHECK(integers(*a) == std::vector<int64_t>{0, 5, 30521, -1});
  }
  SECTION("int64 to int32 when every value fits") {
    HostArray big = HostArray::fromDoubles({2}, "int64", {1, 4294967296.0});
    CHECK_FALSE(convertArray(big, "int32", error));
    CHECK(error.find("4294967296") != std::string::npos);
    HostArray small = HostArray::fromDoubles({2}, "int64", {1, -3});
    auto a = convertArray(small, "int32", error);
    REQUIRE(a);
    CHECK(integers(*a) == std::vector<int64_t>{1, -3});
  }
  SECTION("a float file for an int64 input is refused") {
    HostArray f = HostArray::fromDoubles({2}, "float32", {1, 2});
    CHECK_FALSE(convertArray(f, "int64", error));
    CHECK(error.find("float32") != std::string::npos);
    CHECK(error.find("int64") != std::string::npos);
    CHECK_FALSE(convertArray(f, "bool", error));
  }
  SECTION("float64 to float32 rounds") {
    HostArray d = HostArray::fromDoubles({2}, "float64", {0.1, 1e300});
    auto a = convertArray(d, "float32", error);
    REQUIRE(a);
    CHECK(a->value(0) == double(0.1f));
    CHECK(std::isinf(a->value(1)));
  }
  SECTION("integers to float32 when exact") {
    auto a = convertArray(ids, "float32", error);
    REQUIRE(a);
    CHECK(a->value(2) == 30521.0);
    HostArray big = HostArray::fromDoubles({1}, "int64", {16777217});
    CHECK_FALSE(convertArray(big, "float32", error));
    CHECK(error.find("not exact") != std::string::npos);
  }
  SECTION("masks: bool and int64 both ways") {
    HostArray b = HostArray::fromDoubles({3}, "bool", {1, 0, 1});
    auto a = convertArray(b, "int64", error);
    REQUIRE(a);
    CHECK(integers(*a) == std::vector<int64_t>{1, 0, 1});
    auto back = convertArray(*a, "bool", error);
    REQUIRE(back);
    CHECK(back->bytes == b.bytes);
    CHECK_FALSE(convertArray(ids, "bool", error)); // 5 is no bool
  }
  SECTION("float16 round trip") {
    HostArray h =
        HostArray::fromDoubles({4}, "float16", {1, -0.5, 65504, 1e-7});
    CHECK(h.value(0) == 1);
    CHECK(h.value(1) == -0.5);
    CHECK(h.value(2) == 65504);
    CHECK(h.value(3) == std::ldexp(2.0, -24)); // the nearest subnormal
  }
}

TEST_CASE("references: special values match only themselves", "[tensorfile]") {
  std::string detail;
  auto arr = [](std::vector<float> v) {
    return HostArray::fromFloats({int64_t(v.size())}, v);
  };
  const float nan = NAN, inf = INFINITY;
  CHECK(matchesReference(arr({1, nan, inf, -inf}), arr({1, nan, inf, -inf}),
                         1e-5, detail));
  CHECK_FALSE(matchesReference(arr({1, nan}), arr({1, 2}), 1e-5, detail));
  CHECK_FALSE(matchesReference(arr({1, 2}), arr({1, nan}), 1e-5, detail));
  CHECK_FALSE(matchesReference(arr({1, -inf}), arr({1, inf}), 1e-5, detail));
  CHECK_FALSE(matchesReference(arr({1, 3e38f}), arr({1, inf}), 1e-5, detail));
  CHECK(matchesReference(arr({1, 2}), arr({1, 2.00001f}), 1e-5, detail));
  CHECK_FALSE(matchesReference(arr({1, 2}), arr({1, 2.001f}), 1e-5, detail));
}
