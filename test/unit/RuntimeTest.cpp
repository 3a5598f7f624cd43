// Tests of the runtime: the model.cuts format (runtime/Artifact.cpp), the
// memory plan, and the C API (cuts.h) on whatever machine runs them (without
// a GPU every device path must fail cleanly).

#include "cuts/Artifact.h"
#include "cuts/cuts.h"
#include "cuts/rt/Binding.h"
#include "cuts/rt/Blas.h"
#include "cuts/rt/Checksum.h"
#include "cuts/rt/Library.h"
#include "cuts/rt/Pipeline.h"
#include "cuts/rt/WeightCodec.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <unistd.h>

using namespace cuts::rt;
using Json = nlohmann::json;

namespace {

Tensor tensor(const std::string &name, std::vector<int64_t> shape,
              TensorKind kind) {
  Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.kind = kind;
  return t;
}

KernelLaunch kernel(const std::string &name, std::vector<int> args,
                    std::vector<int> outputs) {
  KernelLaunch k;
  k.name = name;
  k.summary = name + " (test)";
  k.grid = 4;
  k.block = 128;
  k.args = std::move(args);
  k.outputs = std::move(outputs);
  k.pulTimeUs = 1.25;
  return k;
}

std::vector<char> fakeCubin(const std::string &kernel,
                            const std::string &arch) {
  std::string s = "\x7f"
                  "ELF cubin of " +
                  kernel + " for " + arch;
  return std::vector<char>(s.begin(), s.end());
}

/// Two inputs, two weights, three kernels, a view, a copy step, two archs:
///   t4 = add_bias(x, w); t5 = view(t4); t6 = relu(t5); out = scale(t6, b);
///   out2 = copy(y)
ArtifactContents sampleContents() {
  ArtifactContents c;
  Manifest &m = c.manifest;
  m.model = "sample";
  m.producer = "cuts test";
  m.archs = {"sm_80", "sm_90"};
  m.tensors.push_back(tensor("x", {2, 4}, TensorKind::Input));
  m.tensors.back().index = 0;
  m.tensors.push_back(tensor("y", {4}, TensorKind::Input));
  m.tensors.back().index = 1;
  m.tensors.push_back(tensor("w", {4}, TensorKind::Weight));
  m.tensors.back().weightOffset = 0;
  m.tensors.push_back(tensor("b", {2}, TensorKind::Weight));
  m.tensors.back().weightOffset = 256;
  m.tensors.push_back(tensor("t4", {2, 4}, TensorKind::Intermediate));
  m.tensors.push_back(tensor("t5", {8}, TensorKind::View));
  m.tensors.back().viewOf = 4;
  m.tensors.push_back(tensor("t6", {8}, TensorKind::Intermediate));
  m.tensors.push_back(tensor("out", {8}, TensorKind::Output));
  m.tensors.back().index = 0;
  m.tensors.push_back(tensor("out2", {4}, TensorKind::Output));
  m.tensors.back().index = 1;
  m.inputs = {0, 1};
  m.outputs = {7, 8};
  m.kernels.push_back(kernel("add_bias", {0, 2, 4}, {4}));
  m.kernels.push_back(kernel("relu", {5, 6}, {6}));
  m.kernels.push_back(kernel("scale", {6, 3, 7}, {7}));
  m.kernels[2].sharedBytes = 64 * 1024;
  m.kernels[0].flops = 8; // an add per element of x
  m.kernels[0].bytes = 32 + 16 + 32;
  m.target = "H200";
  m.peakFlops = 66.9e12;
  m.bandwidth = 4.8e12;
  m.steps = {Step{0, -1, -1}, Step{1, -1, -1}, Step{2, -1, -1}, Step{-1, 1, 8}};
  c.weights.resize(512);
  for (size_t i = 0; i < c.weights.size(); ++i)
    c.weights[i] = uint8_t(i * 7 + 1);
  for (const KernelLaunch &k : m.kernels) {
    c.sources.push_back("extern \"C\" __global__ void " + k.name + "() {}\n");
    c.cubins.push_back({{"sm_80", fakeCubin(k.name, "sm_80")},
                        {"sm_90", fakeCubin(k.name, "sm_90")}});
  }
  return c;
}

/// What the writer was given, recovered from a parsed artifact.
ArtifactContents contentsOf(const Artifact &a) {
  ArtifactContents c;
  c.manifest = a.manifest;
  uint64_t size = 0;
  const uint8_t *w = a.section("weights", &size);
  c.weights.assign(w, w + size);
  for (size_t k = 0; k < a.manifest.kernels.size(); ++k) {
    c.sources.push_back(a.source(int(k)));
    std::map<std::string, std::vector<char>> cubins;
    for (const auto &[arch, blob] : a.manifest.kernels[k].cubins) {
      const uint8_t *p = a.section("cubin." + arch, &size);
      REQUIRE(p);
      cubins[arch].assign(p + blob.offset, p + blob.offset + blob.size);
    }
    c.cubins.push_back(std::move(cubins));
  }
  return c;
}

uint64_t getU64(const std::vector<uint8_t> &b, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= uint64_t(b[at + i]) << (8 * i);
  return v;
}
void putU64(std::vector<uint8_t> &b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    b[at + i] = uint8_t(v >> (8 * i));
}

/// Recomputes the header's checksum after a test edited the file, so that
/// parsing gets past the checksum to the check under test.
void reseal(std::vector<uint8_t> &b) {
  putU64(b, 24, xxh64(b.data() + 64, b.size() - 64));
}

/// The sections of a file, by the layout in Artifact.h (read independently
/// of the parser).
std::vector<std::pair<std::string, std::vector<uint8_t>>>
sectionsOf(const std::vector<uint8_t> &b) {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
  uint32_t count = b[12] | b[13] << 8 | b[14] << 16 | uint32_t(b[15]) << 24;
  for (uint32_t i = 0; i < count; ++i) {
    size_t e = 64 + 64 * i;
    std::string name(reinterpret_cast<const char *>(&b[e]));
    uint64_t off = getU64(b, e + 32), size = getU64(b, e + 40);
    out.emplace_back(
        name, std::vector<uint8_t>(b.begin() + off, b.begin() + off + size));
  }
  return out;
}

/// Lays out a file from sections (the test's own writer), sealed.
std::vector<uint8_t>
fileOf(const std::vector<std::pair<std::string, std::vector<uint8_t>>> &secs) {
  uint64_t off = 64 + 64 * secs.size();
  std::vector<uint64_t> offsets;
  for (const auto &s : secs) {
    off = (off + 255) / 256 * 256;
    offsets.push_back(off);
    off += s.second.size();
  }
  std::vector<uint8_t> b(off, 0);
  std::memcpy(b.data(), "CUTSMDL", 8);
  b[8] = uint8_t(kArtifactVersion);
  b[12] = uint8_t(secs.size());
  putU64(b, 16, b.size());
  for (size_t i = 0; i < secs.size(); ++i) {
    std::memcpy(&b[64 + 64 * i], secs[i].first.data(), secs[i].first.size());
    putU64(b, 64 + 64 * i + 32, offsets[i]);
    putU64(b, 64 + 64 * i + 40, secs[i].second.size());
    std::copy(secs[i].second.begin(), secs[i].second.end(),
              b.begin() + offsets[i]);
  }
  reseal(b);
  return b;
}

/// The sample file with its manifest JSON edited by `edit`, re-laid-out
/// and re-sealed, so only the manifest check can reject it.
std::vector<uint8_t> withManifest(const std::function<void(Json &)> &edit,
                                  const ArtifactContents *base = nullptr) {
  auto secs = sectionsOf(serializeArtifact(base ? *base : sampleContents()));
  for (auto &[name, bytes] : secs)
    if (name == "manifest") {
      Json j = Json::parse(bytes.begin(), bytes.end());
      edit(j);
      std::string s = j.dump();
      bytes.assign(s.begin(), s.end());
    }
  return fileOf(secs);
}

/// Parses `bytes`, expecting failure; returns the error.
std::string rejection(std::vector<uint8_t> bytes) {
  std::string error;
  auto a = parseArtifact(std::move(bytes), error);
  CHECK_FALSE(a.has_value());
  CHECK_FALSE(error.empty());
  return error;
}

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() /
          ("cuts-runtime-test-" + std::to_string(getpid()) + "-" + name))
      .string();
}

} // namespace

TEST_CASE("the artifact checksum is XXH64 as its specification defines",
          "[runtime]") {
  // Reference values from the xxhash package (Python, seed 0); 35 and 773
  // bytes take the stripe loop and every tail path.
  std::string tail35 = "0123456789abcdef0123456789abcdefXYZ";
  std::vector<uint8_t> b773;
  for (int r = 0; r < 3; ++r)
    for (int i = 0; i < 256; ++i)
      b773.push_back(uint8_t(i));
  for (char c : std::string("tail!"))
    b773.push_back(uint8_t(c));
  auto of = [](const std::string &s) {
    return xxh64(reinterpret_cast<const uint8_t *>(s.data()), s.size());
  };
  CHECK(of("") == 0xef46db3751d8e999ull);
  CHECK(of("a") == 0xd24ec4f1a98c6e5bull);
  CHECK(of("abc") == 0x44bc2cf5ad770999ull);
  CHECK(of(tail35) == 0x654f6a2b39e4d8c1ull);
  CHECK(xxh64(b773.data(), b773.size()) == 0x26bbff34e506daffull);
  // Streamed in uneven pieces: the same digest.
  for (size_t piece : {1, 5, 31, 32, 33, 100}) {
    Xxh64 h;
    for (size_t at = 0; at < b773.size(); at += piece)
      h.update(b773.data() + at, std::min(piece, b773.size() - at));
    CHECK(h.digest() == 0x26bbff34e506daffull);
  }
}

TEST_CASE("artifact round trip", "[runtime]") {
  ArtifactContents c = sampleContents();
  std::vector<uint8_t> bytes = serializeArtifact(c);
  REQUIRE(serializeArtifact(c) == bytes); // deterministic

  std::string error;
  auto a = parseArtifact(bytes, error);
  INFO(error);
  REQUIRE(a.has_value());
  const Manifest &m = a->manifest;
  CHECK(m.model == "sample");
  CHECK(m.producer == "cuts test");
  CHECK(m.archs == std::vector<std::string>{"sm_80", "sm_90"});
  CHECK(m.target == "H200");
  CHECK(m.peakFlops == 66.9e12);
  CHECK(m.bandwidth == 4.8e12);
  REQUIRE(m.tensors.size() == c.manifest.tensors.size());
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    const Tensor &x = m.tensors[i], &y = c.manifest.tensors[i];
    CHECK(x.name == y.name);
    CHECK(x.shape == y.shape);
    CHECK(x.dtype == y.dtype);
    CHECK(x.kind == y.kind);
    CHECK(x.index == y.index);
    CHECK(x.weightOffset == y.weightOffset);
    CHECK(x.viewOf == y.viewOf);
  }
  CHECK(m.inputs == c.manifest.inputs);
  CHECK(m.outputs == c.manifest.outputs);
  REQUIRE(m.kernels.size() == 3);
  for (size_t k = 0; k < 3; ++k) {
    const KernelLaunch &x = m.kernels[k], &y = c.manifest.kernels[k];
    CHECK(x.name == y.name);
    CHECK(x.summary == y.summary);
    CHECK(x.grid == y.grid);
    CHECK(x.block == y.block);
    CHECK(x.sharedBytes == y.sharedBytes);
    CHECK(x.args == y.args);
    CHECK(x.outputs == y.outputs);
    CHECK(x.pulTimeUs == y.pulTimeUs);
    CHECK(x.flops == y.flops);
    CHECK(x.bytes == y.bytes);
    CHECK(a->source(int(k)) == c.sources[k]);
    CHECK(x.cubins.size() == 2);
  }
  REQUIRE(m.steps.size() == 4);
  CHECK(m.steps[3].kernel == -1);
  CHECK(m.steps[3].from == 1);
  CHECK(m.steps[3].to == 8);
  CHECK(a->source(-1).empty());
  CHECK(a->source(3).empty());

  uint64_t size = 0;
  const uint8_t *w = a->section("weights", &size);
  REQUIRE(w);
  CHECK(std::vector<uint8_t>(w, w + size) == c.weights);
  CHECK(a->section("no such section", &size) == nullptr);
  CHECK(size == 0);

  ArtifactContents back = contentsOf(*a);
  CHECK(back.cubins == c.cubins);
  CHECK(serializeArtifact(back) == bytes); // byte-identical re-serialisation

  CHECK(m.tensors[0].bytes() == 32);
  CHECK(rootTensor(m, 5) == 4);
  CHECK(rootTensor(m, 4) == 4);
  CHECK(rootTensor(m, 42) == -1);
}

TEST_CASE("artifact writer lists every arch and shares equal CUBINs",
          "[runtime]") {
  ArtifactContents c = sampleContents();
  c.manifest.archs = {"sm_90"}; // sm_80 only in the kernels' CUBINs
  for (auto &perKernel : c.cubins)
    perKernel["sm_80"] = fakeCubin("all", "sm_80"); // one module for all
  std::string error;
  auto a = parseArtifact(serializeArtifact(c), error);
  INFO(error);
  REQUIRE(a.has_value());
  CHECK(a->manifest.archs == std::vector<std::string>{"sm_90", "sm_80"});
  const auto &k = a->manifest.kernels;
  CHECK(k[0].cubins.at("sm_80").offset == k[2].cubins.at("sm_80").offset);
  CHECK(k[0].cubins.at("sm_90").offset != k[2].cubins.at("sm_90").offset);
}

TEST_CASE("an output may be an equal-sized view of the output tensor",
          "[runtime]") {
  // As the driver returns a reshaped value: the kernel writes the root,
  // which becomes the Output; the caller binds the view's name and shape.
  ArtifactContents c = sampleContents();
  Manifest &m = c.manifest;
  m.tensors[7].name = "out_root";
  m.tensors[7].shape = {2, 4};
  m.tensors.push_back(tensor("out", {8}, TensorKind::View));
  m.tensors.back().viewOf = 7;
  m.outputs[0] = 9;
  std::string error;
  auto a = parseArtifact(serializeArtifact(c), error);
  INFO(error);
  REQUIRE(a.has_value());
  CHECK(a->manifest.outputs[0] == 9);
  MemoryPlan plan = planMemory(a->manifest);
  CHECK(plan.offset[7] == -1);
  CHECK(plan.offset[9] == -1);

  m.tensors[9].shape = {4}; // the caller's buffer would be too small
  CHECK(rejection(serializeArtifact(c)).find("outputs[0]") !=
        std::string::npos);
  m.tensors[9].shape = {8};
  m.tensors[9].viewOf = 6; // a view of an intermediate is no output
  CHECK(rejection(serializeArtifact(c)).find("outputs[0]") !=
        std::string::npos);
}

TEST_CASE("artifact files are written and read back", "[runtime]") {
  std::vector<uint8_t> bytes = serializeArtifact(sampleContents());
  std::string path = tempPath("roundtrip.cuts"), error;
  REQUIRE(writeFile(path, bytes, error));
  auto a = readArtifact(path, error);
  INFO(error);
  REQUIRE(a.has_value());
  CHECK(a->bytes == bytes);
  std::filesystem::remove(path);

  CHECK_FALSE(readArtifact(path, error).has_value());
  CHECK(error.find(path) != std::string::npos);
  CHECK_FALSE(writeFile("/nonexistent-dir/x.cuts", bytes, error));
  CHECK(error.find("/nonexistent-dir/x.cuts") != std::string::npos);
}

TEST_CASE("writeArtifact streams the bytes serializeArtifact makes",
          "[runtime]") {
  ArtifactContents c = sampleContents();
  c.weights.resize(c.weights.size() + 1000003, 0x5a); // an unaligned end
  std::vector<uint8_t> bytes = serializeArtifact(c);
  std::string path = tempPath("streamed.cuts"), error;
  uint64_t size = 0;
  REQUIRE(writeArtifact(path, c, &size, error));
  CHECK(size == bytes.size());
  auto a = readArtifact(path, error);
  INFO(error);
  REQUIRE(a.has_value());
  CHECK(a->bytes == bytes);
  std::filesystem::remove(path);
  CHECK_FALSE(writeArtifact("/nonexistent-dir/x.cuts", c, nullptr, error));
  CHECK(error.find("/nonexistent-dir/x.cuts") != std::string::npos);
}

TEST_CASE("weight spans are written where they lie, zeros between",
          "[runtime]") {
  // The same section as one vector and as a vector plus spans kept
  // elsewhere: the same file.
  ArtifactContents flat = sampleContents(), spans = flat;
  std::vector<uint8_t> a(1000, 0x11), b(77777, 0x22); // b ends unaligned
  const uint64_t at = flat.weights.size();
  spans.weightSpans = {{at + 256, a.data(), a.size()},
                       {at + 1280, b.data(), b.size()}};
  flat.weights.resize(at + 1280 + b.size(), 0);
  std::copy(a.begin(), a.end(), flat.weights.begin() + at + 256);
  std::copy(b.begin(), b.end(), flat.weights.begin() + at + 1280);
  CHECK(spans.weightBytes() == flat.weights.size());
  std::vector<uint8_t> bytes = serializeArtifact(flat);
  CHECK(serializeArtifact(spans) == bytes);
  std::string path = tempPath("spans.cuts"), error;
  REQUIRE(writeArtifact(path, spans, nullptr, error));
  auto read = readArtifact(path, error);
  INFO(error);
  REQUIRE(read.has_value());
  CHECK(read->bytes == bytes);
  std::filesystem::remove(path);
  // Overlapping spans are refused, not written.
  spans.weightSpans[1].offset = at + 1000;
  CHECK(serializeArtifact(spans).empty());
  CHECK_FALSE(writeArtifact(path, spans, nullptr, error));
  CHECK(error.find("overlap") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("truncated artifacts are rejected", "[runtime]") {
  std::vector<uint8_t> bytes = serializeArtifact(sampleContents());
  for (size_t cut : {size_t(0), size_t(4), size_t(63), size_t(64), size_t(100),
                     bytes.size() / 2, bytes.size() - 1}) {
    INFO("cut at " << cut);
    std::string error =
        rejection(std::vector<uint8_t>(bytes.begin(), bytes.begin() + cut));
    CHECK(error.find("truncated") != std::string::npos);
  }
}

TEST_CASE("any flipped byte is rejected", "[runtime]") {
  std::vector<uint8_t> bytes = serializeArtifact(sampleContents());
  for (size_t i = 0; i < bytes.size(); ++i)
    for (uint8_t mask : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xff)}) {
      std::vector<uint8_t> bad = bytes;
      bad[i] ^= mask;
      std::string error;
      auto a = parseArtifact(std::move(bad), error);
      if (a.has_value() || error.empty())
        FAIL("byte " << i << " ^ " << int(mask) << " was accepted");
    }
  // Past the header the checksum is what catches it.
  std::vector<uint8_t> bad = bytes;
  bad[bytes.size() / 2] ^= 0x10;
  CHECK(rejection(bad).find("checksum") != std::string::npos);
}

TEST_CASE("bad magic and newer versions are rejected", "[runtime]") {
  std::vector<uint8_t> bytes = serializeArtifact(sampleContents());
  std::vector<uint8_t> bad = bytes;
  bad[0] = 'X';
  CHECK(rejection(bad).find("magic") != std::string::npos);
  CHECK(rejection({'\x7f', 'E', 'L', 'F'}).find("magic") != std::string::npos);

  bad = bytes;
  bad[8] = uint8_t(kArtifactVersion + 1);
  std::string error = rejection(bad);
  CHECK(error.find("version " + std::to_string(kArtifactVersion + 1)) !=
        std::string::npos);
  CHECK(error.find("newer") != std::string::npos);
}

TEST_CASE("the test's writer matches the runtime's", "[runtime]") {
  std::vector<uint8_t> bytes = serializeArtifact(sampleContents());
  CHECK(fileOf(sectionsOf(bytes)) == bytes);
  std::string error;
  auto a = parseArtifact(withManifest([](Json &) {}), error);
  INFO(error);
  CHECK(a.has_value());
}

TEST_CASE("manifest errors name the field", "[runtime]") {
  SECTION("tensor id out of range") {
    std::string error = rejection(
        withManifest([](Json &j) { j["kernels"][1]["args"][0] = 99; }));
    CHECK(error.find("kernels[1].args[0]") != std::string::npos);
    CHECK(error.find("99") != std::string::npos);
    CHECK(error.find("out of range") != std::string::npos);
  }
  SECTION("input id out of range") {
    std::string error =
        rejection(withManifest([](Json &j) { j["inputs"][1] = -1; }));
    CHECK(error.find("inputs[1]") != std::string::npos);
  }
  SECTION("step tensor out of range") {
    std::string error =
        rejection(withManifest([](Json &j) { j["steps"][3]["to"] = 9; }));
    CHECK(error.find("steps[3].to") != std::string::npos);
  }
  SECTION("step kernel out of range") {
    std::string error =
        rejection(withManifest([](Json &j) { j["steps"][0]["kernel"] = 3; }));
    CHECK(error.find("steps[0].kernel") != std::string::npos);
  }
  SECTION("weight range outside the weights section") {
    std::string error = rejection(
        withManifest([](Json &j) { j["tensors"][3]["weightOffset"] = 512; }));
    CHECK(error.find("tensors[3].weightOffset") != std::string::npos);
    CHECK(error.find("outside the weights section") != std::string::npos);
  }
  SECTION("misaligned weight") {
    std::string error = rejection(
        withManifest([](Json &j) { j["tensors"][3]["weightOffset"] = 8; }));
    CHECK(error.find("aligned") != std::string::npos);
  }
  SECTION("missing field") {
    std::string error = rejection(
        withManifest([](Json &j) { j["tensors"][2].erase("dtype"); }));
    CHECK(error.find("tensors[2].dtype") != std::string::npos);
    CHECK(error.find("missing") != std::string::npos);
  }
  SECTION("wrong type") {
    std::string error =
        rejection(withManifest([](Json &j) { j["kernels"][0]["grid"] = "4"; }));
    CHECK(error.find("kernels[0].grid") != std::string::npos);
    CHECK(error.find("integer") != std::string::npos);
  }
  SECTION("view cycle") {
    std::string error = rejection(withManifest([](Json &j) {
      j["tensors"][4]["kind"] = "view";
      j["tensors"][4]["viewOf"] = 5;
    }));
    CHECK(error.find("cycle") != std::string::npos);
  }
  SECTION("kernel blob outside its section") {
    std::string error = rejection(withManifest(
        [](Json &j) { j["kernels"][2]["cubins"]["sm_90"]["size"] = 100000; }));
    CHECK(error.find("kernels[2].cubins.sm_90") != std::string::npos);
  }
  SECTION("kernel writes an input") {
    std::string error = rejection(withManifest(
        [](Json &j) { j["kernels"][0]["outputs"] = Json::array({0}); }));
    CHECK(error.find("kernels[0].outputs[0]") != std::string::npos);
  }
  SECTION("copy of unequal sizes") {
    std::string error =
        rejection(withManifest([](Json &j) { j["steps"][3]["from"] = 0; }));
    CHECK(error.find("steps[3]") != std::string::npos);
  }
  SECTION("an output nothing writes") {
    std::string error = rejection(
        withManifest([](Json &j) { j["steps"].erase(j["steps"].size() - 1); }));
    CHECK(error.find("out2") != std::string::npos);
  }
  SECTION("negative work") {
    std::string error =
        rejection(withManifest([](Json &j) { j["kernels"][0]["flops"] = -1; }));
    CHECK(error.find("kernels[0].flops") != std::string::npos);
    CHECK(error.find("negative") != std::string::npos);
    error =
        rejection(withManifest([](Json &j) { j["kernels"][1]["bytes"] = -8; }));
    CHECK(error.find("kernels[1].bytes") != std::string::npos);
  }
  SECTION("a target without its ceilings") {
    std::string error = rejection(
        withManifest([](Json &j) { j["target"].erase("bandwidth"); }));
    CHECK(error.find("target.bandwidth") != std::string::npos);
    CHECK(error.find("missing") != std::string::npos);
    error = rejection(
        withManifest([](Json &j) { j["target"]["peakFlops"] = "66.9T"; }));
    CHECK(error.find("target.peakFlops") != std::string::npos);
  }
  SECTION("not JSON") {
    auto secs = sectionsOf(serializeArtifact(sampleContents()));
    secs[0].second = {'{', 'x'};
    CHECK(rejection(fileOf(secs)).find("JSON") != std::string::npos);
  }
}

TEST_CASE("section table errors", "[runtime]") {
  std::vector<uint8_t> bytes = serializeArtifact(sampleContents());
  SECTION("misaligned section") {
    std::vector<uint8_t> bad = bytes;
    putU64(bad, 64 + 32, getU64(bad, 64 + 32) + 8);
    reseal(bad);
    CHECK(rejection(bad).find("aligned") != std::string::npos);
  }
  SECTION("section past the end") {
    std::vector<uint8_t> bad = bytes;
    putU64(bad, 64 + 64 + 40, bytes.size());
    reseal(bad);
    CHECK(rejection(bad).find("outside the file") != std::string::npos);
  }
  SECTION("no manifest") {
    auto secs = sectionsOf(bytes);
    secs[0].first = "manifesto";
    CHECK(rejection(fileOf(secs)).find("manifest") != std::string::npos);
  }
}

namespace {

/// Live intervals by the definition: first write to last read (a view's use
/// is its root's), for Intermediate roots.
std::map<int, std::pair<int, int>> liveIntervals(const Manifest &m) {
  std::map<int, std::pair<int, int>> live;
  auto use = [&](int t, int s, bool write) {
    int r = rootTensor(m, t);
    if (m.tensors[r].kind != TensorKind::Intermediate)
      return;
    auto it = live.find(r);
    if (it == live.end()) {
      REQUIRE(write); // the generators write before they read
      live[r] = {s, s};
    } else {
      it->second.second = std::max(it->second.second, s);
    }
  };
  for (size_t s = 0; s < m.steps.size(); ++s) {
    const Step &st = m.steps[s];
    if (st.kernel < 0) {
      use(st.from, int(s), false);
      use(st.to, int(s), true);
      continue;
    }
    const KernelLaunch &k = m.kernels[st.kernel];
    for (int t : k.outputs)
      use(t, int(s), true);
    for (int t : k.args)
      if (std::find(k.outputs.begin(), k.outputs.end(), t) == k.outputs.end())
        use(t, int(s), false);
  }
  return live;
}

void checkPlan(const Manifest &m, const MemoryPlan &plan) {
  auto live = liveIntervals(m);
  uint64_t naive = 0;
  for (const auto &[t, interval] : live) {
    INFO("tensor " << t);
    REQUIRE(plan.offset[t] >= 0);
    CHECK(plan.offset[t] % 256 == 0);
    CHECK(uint64_t(plan.offset[t]) + m.tensors[t].bytes() <= plan.arenaBytes);
    naive += (m.tensors[t].bytes() + 255) / 256 * 256;
    for (const auto &[u, other] : live) {
      if (u <= t || interval.second < other.first ||
          other.second < interval.first)
        continue;
      uint64_t a0 = uint64_t(plan.offset[t]), a1 = a0 + m.tensors[t].bytes();
      uint64_t b0 = uint64_t(plan.offset[u]), b1 = b0 + m.tensors[u].bytes();
      INFO("overlaps tensor " << u);
      CHECK((a1 <= b0 || b1 <= a0 || a0 == a1 || b0 == b1));
    }
  }
  CHECK(plan.naiveBytes == naive);
  CHECK(plan.arenaBytes <= plan.naiveBytes);
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    TensorKind k = m.tensors[t].kind;
    int r = rootTensor(m, int(t));
    if (k == TensorKind::View)
      CHECK(plan.offset[t] == plan.offset[r]); // a view is its root's memory
    else if (k != TensorKind::Intermediate)
      CHECK(plan.offset[t] == -1);
  }
}

/// A random DAG: each kernel reads a few earlier values (input, weight,
/// intermediates, views) and writes one or two new ones; some values get
/// views; copies now and then; the last value feeds the output.
Manifest randomDag(std::mt19937 &rng) {
  Manifest m;
  auto pick = [&](int n) { return int(rng() % unsigned(n)); };
  m.tensors.push_back(tensor("in", {64}, TensorKind::Input));
  m.tensors.back().index = 0;
  m.inputs = {0};
  m.tensors.push_back(tensor("w", {64}, TensorKind::Weight));
  std::vector<int> values = {0, 1};
  int numKernels = 1 + pick(24);
  for (int k = 0; k < numKernels; ++k) {
    std::vector<int> args;
    int reads = 1 + pick(3);
    for (int i = 0; i < reads; ++i)
      args.push_back(values[pick(int(values.size()))]);
    std::sort(args.begin(), args.end());
    args.erase(std::unique(args.begin(), args.end()), args.end());
    std::vector<int> outs;
    int writes = 1 + pick(2);
    for (int i = 0; i < writes; ++i) {
      int t = int(m.tensors.size());
      m.tensors.push_back(tensor("t" + std::to_string(t),
                                 {int64_t(1 + pick(4096))},
                                 TensorKind::Intermediate));
      outs.push_back(t);
      args.push_back(t);
    }
    m.kernels.push_back(kernel("k" + std::to_string(k), args, outs));
    m.steps.push_back(Step{k, -1, -1});
    for (int t : outs) {
      values.push_back(t);
      if (pick(3) == 0) { // a view of it, used later in its place
        int v = int(m.tensors.size());
        Tensor view = m.tensors[t];
        view.name += "_view";
        view.kind = TensorKind::View;
        view.viewOf = t;
        m.tensors.push_back(view);
        values.push_back(v);
      }
      if (pick(5) == 0) { // a copy into a fresh intermediate
        int c = int(m.tensors.size());
        Tensor copy = m.tensors[t];
        copy.name += "_copy";
        copy.kind = TensorKind::Intermediate;
        copy.viewOf = -1;
        m.tensors.push_back(copy);
        m.steps.push_back(Step{-1, t, c});
        values.push_back(c);
      }
    }
  }
  int out = int(m.tensors.size());
  m.tensors.push_back(tensor("out", {64}, TensorKind::Output));
  m.tensors.back().index = 0;
  m.outputs = {out};
  m.kernels.push_back(kernel(
      "final", {values.back(), values[pick(int(values.size()))], out}, {out}));
  std::sort(m.kernels.back().args.begin(), m.kernels.back().args.end() - 1);
  m.steps.push_back(Step{int(m.kernels.size()) - 1, -1, -1});
  return m;
}

} // namespace

TEST_CASE("memory plan: live intermediates never overlap", "[runtime]") {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 300; ++trial) {
    INFO("trial " << trial);
    Manifest m = randomDag(rng);
    MemoryPlan plan = planMemory(m);
    REQUIRE(plan.offset.size() == m.tensors.size());
    checkPlan(m, plan);
    MemoryPlan again = planMemory(m);
    CHECK(again.offset == plan.offset); // deterministic
  }
}

TEST_CASE("memory plan: a chain reuses memory", "[runtime]") {
  Manifest m;
  m.tensors.push_back(tensor("in", {1000}, TensorKind::Input));
  m.tensors.back().index = 0;
  m.inputs = {0};
  int prev = 0;
  for (int i = 0; i < 10; ++i) {
    int t = int(m.tensors.size());
    m.tensors.push_back(
        tensor("t" + std::to_string(i), {1000}, TensorKind::Intermediate));
    m.kernels.push_back(kernel("k" + std::to_string(i), {prev, t}, {t}));
    m.steps.push_back(Step{i, -1, -1});
    prev = t;
  }
  int out = int(m.tensors.size());
  m.tensors.push_back(tensor("out", {1000}, TensorKind::Output));
  m.tensors.back().index = 0;
  m.outputs = {out};
  m.kernels.push_back(kernel("last", {prev, out}, {out}));
  m.steps.push_back(Step{10, -1, -1});

  MemoryPlan plan = planMemory(m);
  checkPlan(m, plan);
  CHECK(plan.naiveBytes == 10 * 4096);
  CHECK(plan.arenaBytes < plan.naiveBytes);
  CHECK(plan.arenaBytes == 4096 + 4000); // two buffers ping-pong
}

TEST_CASE("memory plan: a side stream's steps are live together", "[runtime]") {
  // The chain's k1 (producer) and k2 (consumer, on the side stream) run
  // concurrently: k2's output must not take the memory of k1's input,
  // which the chain alone would reuse.
  Manifest m;
  m.tensors.push_back(tensor("in", {1000}, TensorKind::Input));
  m.tensors.back().index = 0;
  m.inputs = {0};
  for (int i = 0; i < 4; ++i) {
    m.tensors.push_back(
        tensor("t" + std::to_string(i), {1000}, TensorKind::Intermediate));
    m.kernels.push_back(kernel("k" + std::to_string(i), {i, i + 1}, {i + 1}));
  }
  m.tensors.push_back(tensor("out", {1000}, TensorKind::Output));
  m.tensors.back().index = 0;
  m.outputs = {5};
  m.kernels.push_back(kernel("last", {4, 5}, {5}));
  m.steps = {Step{0, -1, -1}, Step{1, -1, -1}, Step{2, -1, -1, 1, 0},
             Step{3, -1, -1, 0, 2}, Step{4, -1, -1}};
  MemoryPlan plan = planMemory(m);
  checkPlan(m, plan);
  // t0 (k1's input), t1 (between) and t2 (k2's output) live at once.
  std::set<int64_t> offsets{plan.offset[1], plan.offset[2], plan.offset[3]};
  CHECK(offsets.size() == 3);
  m.steps[2].stream = 0, m.steps[2].after = -1, m.steps[3].after = -1;
  CHECK(planMemory(m).offset[3] == plan.offset[1]); // in stream order: reused
}

TEST_CASE("side-stream steps and state tensors", "[runtime]") {
  // The sample's relu on the side stream: forked after add_bias, joined by
  // scale; a state tensor (the semaphores) that relu reads.
  auto sided = [](Json &j) {
    j["steps"][1]["stream"] = 1;
    j["steps"][1]["after"] = 0;
    j["steps"][2]["after"] = 1;
  };
  std::string error;
  auto a = parseArtifact(withManifest(sided), error);
  INFO(error);
  REQUIRE(a);
  CHECK(a->manifest.steps[1].stream == 1);
  CHECK(a->manifest.steps[2].after == 1);
  ArtifactContents c = contentsOf(*a);
  c.manifest.tensors.push_back(tensor("sems", {4}, TensorKind::State));
  c.manifest.tensors.back().dtype = "int32";
  c.manifest.kernels[1].args.push_back(int(c.manifest.tensors.size() - 1));
  auto b = parseArtifact(serializeArtifact(c), error);
  INFO(error);
  REQUIRE(b);
  CHECK(b->manifest.tensors.back().kind == TensorKind::State);
  CHECK(b->manifest.steps[1].after == 0);
  const MemoryPlan plan = planMemory(b->manifest);
  CHECK(plan.offset.back() == -1); // not in the arena: the session's state
  CHECK(plan.stateOffset.back() == 0);
  CHECK(plan.stateBytes == 256);

  auto reject = [&](std::function<void(Json &)> edit, const char *what) {
    std::string e = rejection(withManifest([&](Json &j) {
      sided(j);
      edit(j);
    }));
    INFO(e);
    CHECK(e.find(what) != std::string::npos);
  };
  reject([](Json &j) { j["steps"][1]["after"] = -1; },
         "must wait for a step of stream 0");
  reject([](Json &j) { j["steps"][2]["after"] = -1; },
         "no later step of stream 0 waits");
  reject([](Json &j) { j["steps"][2]["after"] = 0; }, "same stream");
  reject([](Json &j) { j["steps"][1]["after"] = 1; }, "out of range");
  reject([](Json &j) { j["steps"][1]["stream"] = 2; }, "out of range");
  reject(
      [](Json &j) {
        j["steps"][3]["stream"] = 1;
        j["steps"][3]["after"] = 2;
      },
      "only generated kernels"); // a copy
  // Programmatic launches: after a generated kernel on the same stream.
  auto pdl = [](Json &j) { j["steps"][2]["pdl"] = true; };
  REQUIRE(parseArtifact(withManifest(pdl), error));
  CHECK(parseArtifact(withManifest(pdl), error)->manifest.steps[2].pdl);
  reject([](Json &j) { j["steps"][2]["pdl"] = true; }, "programmatic"); // joins
  reject([](Json &j) { j["steps"][0]["pdl"] = true; }, "programmatic");
  reject([](Json &j) { j["steps"][1]["pdl"] = 1; }, "a boolean");
  // Over PDL: the side run's second step, after its wait kernel (which
  // writes nothing and nothing waits for), reading its producer's output
  // just before it, the next step joining.
  ArtifactContents over = sampleContents();
  {
    Manifest &m = over.manifest;
    m.kernels.push_back(kernel("hold", {}, {}));
    over.sources.push_back("extern \"C\" __global__ void hold() {}\n");
    over.cubins.push_back({{"sm_80", fakeCubin("hold", "sm_80")},
                           {"sm_90", fakeCubin("hold", "sm_90")}});
    Step hold{3, -1, -1, 1, 0}, relu{1, -1, -1, 1, -1}, scale{2, -1, -1, 0, 2};
    relu.overPdl = true;
    m.steps = {m.steps[0], hold, relu, scale, m.steps[3]};
  }
  auto o = parseArtifact(serializeArtifact(over), error);
  INFO(error);
  REQUIRE(o);
  CHECK(o->manifest.steps[2].overPdl);
  auto rejectOverPdl = [&](std::function<void(Manifest &)> edit) {
    ArtifactContents bad = over;
    edit(bad.manifest);
    std::string e = rejection(serializeArtifact(bad));
    INFO(e);
    CHECK(e.find("overPdl") != std::string::npos);
  };
  rejectOverPdl([](Manifest &m) { m.steps[1].overPdl = true; });
  rejectOverPdl([](Manifest &m) { // a wait kernel that writes
    m.kernels[3].args = m.kernels[3].outputs = {8};
  });
  rejectOverPdl([](Manifest &m) { // not its producer's output
    m.steps[0].kernel = 3, m.steps[1].kernel = 0;
  });
  reject(
      [](Json &j) {
        j["tensors"][6]["kind"] = "state";
        j["tensors"][6]["dtype"] = "float32";
      },
      "int32 counters");
}

TEST_CASE("memory plan of the sample: views share their root", "[runtime]") {
  Manifest m = sampleContents().manifest;
  MemoryPlan plan = planMemory(m);
  checkPlan(m, plan);
  CHECK(plan.offset[5] == plan.offset[4]);
  // t4 (through its view t5) is read by relu, which writes t6: both live.
  CHECK(plan.offset[4] != plan.offset[6]);
  CHECK(plan.arenaBytes == 256 + 32);
}

TEST_CASE("C API without arguments", "[runtime]") {
  CHECK(cuts_api_version() == CUTS_API_VERSION);
  CHECK(std::string(cuts_status_name(CUTS_ERROR_NO_CUBIN)) ==
        "CUTS_ERROR_NO_CUBIN");
  CHECK(std::string(cuts_status_name(cuts_status(99))) == "CUTS_ERROR_UNKNOWN");

  cuts_model *model = nullptr;
  CHECK(cuts_model_load(nullptr, nullptr, &model) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(cuts_last_error()).size() > 0);
  CHECK(cuts_model_load("x.cuts", nullptr, nullptr) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(cuts_model_load_memory(nullptr, 10, nullptr, &model) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(model == nullptr);

  cuts_tensor_info info;
  CHECK(cuts_model_input(nullptr, 0, &info) == CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(cuts_model_output(nullptr, 0, &info) == CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(cuts_model_num_inputs(nullptr) == 0);
  CHECK(cuts_model_num_outputs(nullptr) == 0);
  CHECK(cuts_model_num_kernels(nullptr) == 0);
  CHECK(cuts_model_arena_bytes(nullptr) == 0);
  CHECK(cuts_model_weight_bytes(nullptr) == 0);
  CHECK(std::string(cuts_model_arch(nullptr)).empty());
  const char *name = nullptr;
  CHECK(cuts_model_kernel(nullptr, 0, &name, nullptr, nullptr) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  double flops = -1, peak = -1;
  CHECK(cuts_model_kernel_work(nullptr, 0, &flops, nullptr) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(cuts_model_target(nullptr, &name, &peak, nullptr) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(flops == -1);

  cuts_session *session = nullptr;
  CHECK(cuts_session_create(nullptr, nullptr, 0, &session) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(session == nullptr);
  CHECK(cuts_session_run(nullptr, nullptr, 0, nullptr, 0) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(cuts_session_run_host(nullptr, nullptr, 0, nullptr, 0) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(cuts_session_synchronize(nullptr) == CUTS_ERROR_INVALID_ARGUMENT);
  uint64_t ticket = 7;
  CHECK(cuts_session_submit_host(nullptr, nullptr, 0, nullptr, 0, &ticket) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(ticket == 0);
  CHECK(cuts_session_wait(nullptr, 1) == CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(cuts_session_set_preload(nullptr, 0) == CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(cuts_model_swap_weights(nullptr, "x.cuts") ==
        CUTS_ERROR_INVALID_ARGUMENT);
  cuts_movement mv{};
  CHECK(cuts_session_movement(nullptr, 0, &mv) == CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(cuts_session_reset_movement(nullptr) == CUTS_ERROR_INVALID_ARGUMENT);
  void *host = &ticket;
  CHECK(cuts_host_alloc(16, nullptr) == CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(cuts_host_alloc(0, &host) == CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(host == nullptr);
  cuts_host_free(nullptr);
  cuts_host_free(&ticket); // not from cuts_host_alloc: ignored
  float ms = 0;
  CHECK(cuts_session_benchmark(nullptr, 1, 1, &ms) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(cuts_session_profile(nullptr, 1, &ms) == CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(cuts_last_error()).size() > 0);
  cuts_model_free(nullptr);
  cuts_session_free(nullptr);
}

TEST_CASE("C API loading", "[runtime]") {
  cuts_model *model = nullptr;
  SECTION("missing file") {
    CHECK(cuts_model_load(tempPath("missing.cuts").c_str(), nullptr, &model) ==
          CUTS_ERROR_IO);
    CHECK(std::string(cuts_last_error()).find("missing.cuts") !=
          std::string::npos);
  }
  SECTION("corrupted file") {
    std::vector<uint8_t> bytes = serializeArtifact(sampleContents());
    bytes[bytes.size() - 3] ^= 1;
    std::string path = tempPath("corrupt.cuts"), error;
    REQUIRE(writeFile(path, bytes, error));
    CHECK(cuts_model_load(path.c_str(), nullptr, &model) ==
          CUTS_ERROR_BAD_ARTIFACT);
    CHECK(std::string(cuts_last_error()).find("checksum") != std::string::npos);
    std::filesystem::remove(path);
    CHECK(cuts_model_load_memory(bytes.data(), bytes.size(), nullptr, &model) ==
          CUTS_ERROR_BAD_ARTIFACT);
    CHECK(cuts_model_load_memory(bytes.data(), 0, nullptr, &model) ==
          CUTS_ERROR_BAD_ARTIFACT);
  }
  SECTION("valid file") {
    std::vector<uint8_t> bytes = serializeArtifact(sampleContents());
    std::string path = tempPath("valid.cuts"), error;
    REQUIRE(writeFile(path, bytes, error));
    cuts_status s = cuts_model_load(path.c_str(), nullptr, &model);
    std::filesystem::remove(path);
    // The sample's CUBINs are fake: on a GPU the load fails in the driver
    // (or for want of an sm_80/sm_90 CUBIN), never before it.
    INFO(cuts_last_error());
    CHECK((s == CUTS_ERROR_NO_DEVICE || s == CUTS_ERROR_NO_CUBIN ||
           s == CUTS_ERROR_CUDA));
    CHECK(std::string(cuts_last_error()).size() > 0);
    cuts_load_options options{};
    options.device = -1;
    CHECK(cuts_model_load_memory(bytes.data(), bytes.size(), &options,
                                 &model) == CUTS_ERROR_INVALID_ARGUMENT);
  }
  CHECK(model == nullptr);
}

//===- Library kernels (cuDNN)
//---------------------------------------------===//

namespace {

/// A 3x3 convolution with bias, residual and relu: 1x4x6x6 -> 1x8x6x6.
ConvSpec testSpec() {
  ConvSpec s;
  s.N = 1, s.C = 4, s.H = 6, s.W = 6, s.K = 8, s.FH = 3, s.FW = 3;
  s.padH = s.padW = 1;
  s.OH = 6, s.OW = 6;
  s.bias = s.residual = s.relu = true;
  s.algo = 1;
  return s;
}

/// y = relu(conv(x, w) + b + z) as one library kernel; with `generated`, y
/// is an intermediate that a generated kernel copies to the output.
///   tensors: 0 x, 1 z (inputs), 2 w, 3 b (weights), 4 y, [5 out]
ArtifactContents libraryContents(bool generated) {
  ConvSpec s = testSpec();
  ArtifactContents c;
  Manifest &m = c.manifest;
  m.model = "library";
  m.producer = "cuts test";
  m.tensors.push_back(tensor("x", {s.N, s.C, s.H, s.W}, TensorKind::Input));
  m.tensors.back().index = 0;
  m.tensors.push_back(tensor("z", {s.N, s.K, s.OH, s.OW}, TensorKind::Input));
  m.tensors.back().index = 1;
  m.tensors.push_back(tensor("w", {s.K, s.C, s.FH, s.FW}, TensorKind::Weight));
  m.tensors.back().weightOffset = 0;
  m.tensors.push_back(tensor("b", {s.K}, TensorKind::Weight));
  m.tensors.back().weightOffset = 1280; // w's 1152 bytes, aligned
  m.tensors.push_back(
      tensor("y", {s.N, s.K, s.OH, s.OW},
             generated ? TensorKind::Intermediate : TensorKind::Output));
  m.inputs = {0, 1};
  KernelLaunch k;
  k.name = "conv0";
  k.summary = describeConvSpec(s);
  k.args = {0, 2, 3, 1, 4};
  k.outputs = {4};
  k.pulTimeUs = 0.5;
  k.flops = 1234;
  k.bytes = 5678;
  k.library = kCudnnConv;
  k.libraryParams = encodeConvSpec(s);
  k.workspaceBytes = 4096;
  m.kernels.push_back(k);
  m.steps = {Step{0, -1, -1}};
  c.sources = {""};
  c.cubins = {{}};
  if (generated) {
    m.archs = {"sm_90"};
    m.tensors.push_back(
        tensor("out", {s.N, s.K, s.OH, s.OW}, TensorKind::Output));
    m.tensors.back().index = 0;
    m.outputs = {5};
    m.kernels.push_back(kernel("copy_out", {4, 5}, {5}));
    m.steps.push_back(Step{1, -1, -1});
    c.sources.push_back("extern \"C\" __global__ void copy_out() {}\n");
    c.cubins.push_back({{"sm_90", fakeCubin("copy_out", "sm_90")}});
  } else {
    m.tensors.back().index = 0;
    m.outputs = {4};
  }
  // Weights: small values of both signs.
  std::vector<float> w(size_t(s.wBytes() / 4)), b(size_t(s.K));
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = float(int(i * 37 % 17) - 8) / 16.0f;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(int(i) - 4) / 8.0f;
  c.weights.assign(1280 + 256, 0);
  std::memcpy(c.weights.data(), w.data(), s.wBytes());
  std::memcpy(c.weights.data() + 1280, b.data(), s.biasBytes());
  return c;
}

/// The CPU reference of a ConvSpec (double accumulation).
std::vector<float> referenceConv(const ConvSpec &s, const std::vector<float> &x,
                                 const std::vector<float> &w,
                                 const std::vector<float> &b,
                                 const std::vector<float> &z) {
  std::vector<float> y(size_t(s.yBytes() / 4));
  int64_t cg = s.C / s.group, kg = s.K / s.group;
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t k = 0; k < s.K; ++k)
      for (int64_t oh = 0; oh < s.OH; ++oh)
        for (int64_t ow = 0; ow < s.OW; ++ow) {
          double acc = 0;
          int64_t g = k / kg;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t r = 0; r < s.FH; ++r)
              for (int64_t q = 0; q < s.FW; ++q) {
                int64_t ih = oh * s.strideH - s.padH + r * s.dilH;
                int64_t iw = ow * s.strideW - s.padW + q * s.dilW;
                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W)
                  continue;
                acc +=
                    double(x[((n * s.C + g * cg + c) * s.H + ih) * s.W + iw]) *
                    double(w[((k * cg + c) * s.FH + r) * s.FW + q]);
              }
          size_t o = size_t(((n * s.K + k) * s.OH + oh) * s.OW + ow);
          if (s.bias)
            acc += b[size_t(k)];
          if (s.residual)
            acc += z[o];
          y[o] = float(s.relu ? std::max(acc, 0.0) : acc);
        }
  return y;
}

double relativeL2(const std::vector<float> &got,
                  const std::vector<float> &want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    den += double(want[i]) * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

} // namespace

TEST_CASE("ConvSpec encodes in a fixed order and decodes back", "[runtime]") {
  ConvSpec s;
  s.N = 2, s.C = 6, s.H = 11, s.W = 13, s.K = 9, s.FH = 3, s.FW = 5;
  s.padH = 1, s.padW = 2, s.strideH = 2, s.strideW = 1, s.dilH = 1, s.dilW = 2,
  s.group = 3;
  s.OH = 6, s.OW = 9; // (11 + 2 - 2 - 1) / 2 + 1, (13 + 4 - 8 - 1) / 1 + 1
  s.bias = true, s.residual = false, s.relu = true, s.algo = 6;
  std::vector<int64_t> p = encodeConvSpec(s);
  CHECK(p == std::vector<int64_t>{2, 6, 11, 13, 9, 3, 5, 1, 2, 2, 1,
                                  1, 2, 3,  6,  9, 1, 0, 1, 6, 0, 0});
  CHECK(p.size() == kConvSpecParams);
  std::string error;
  auto back = decodeConvSpec(p, error);
  INFO(error);
  REQUIRE(back.has_value());
  CHECK(*back == s);
  CHECK(back->xBytes() == 4 * 2 * 6 * 11 * 13);
  CHECK(back->wBytes() == 4 * 9 * 2 * 3 * 5);
  CHECK(back->biasBytes() == 4 * 9);
  CHECK(back->yBytes() == 4 * 2 * 9 * 6 * 9);
  CHECK(back->numArgs() == 4);

  ConvSpec dw = testSpec(); // depthwise, no relu
  dw.group = dw.C = dw.K = 8;
  dw.relu = dw.residual = false;
  auto d = decodeConvSpec(encodeConvSpec(dw), error);
  INFO(error);
  REQUIRE(d.has_value());
  CHECK(*d == dw);
  CHECK(d->wBytes() == 4 * 8 * 1 * 3 * 3);
  CHECK(d != s);

  // Channels-last (param 21); older artifacts' 21 params decode as NCHW.
  ConvSpec nhwc = testSpec();
  nhwc.channelsLast = true;
  auto l = decodeConvSpec(encodeConvSpec(nhwc), error);
  REQUIRE(l.has_value());
  CHECK(l->channelsLast);
  CHECK(*l != testSpec());
  std::vector<int64_t> old = encodeConvSpec(nhwc);
  old.pop_back();
  auto o = decodeConvSpec(old, error);
  REQUIRE(o.has_value());
  CHECK(*o == testSpec());
  CHECK(describeConvSpec(nhwc).find(" NHWC algo") != std::string::npos);

  CHECK(CudnnConv::forwardAlgorithms() ==
        std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(cudnnAlgoName(1) == "IMPLICIT_PRECOMP_GEMM");
  CHECK(cudnnAlgoName(7) == "WINOGRAD_NONFUSED");
  CHECK(cudnnAlgoName(8) == "algo 8");
  CHECK(describeConvSpec(testSpec()) ==
        "conv 1x4x6x6 * 8x4x3x3 pad 1,1 stride 1,1 dil 1,1 group 1 -> "
        "1x8x6x6 +bias +z relu algo 1");
}

TEST_CASE("ConvSpec checks", "[runtime]") {
  std::string error;
  auto refuse = [&](std::vector<int64_t> p) {
    error.clear();
    CHECK_FALSE(decodeConvSpec(p, error).has_value());
    CHECK_FALSE(error.empty());
    return error;
  };
  std::vector<int64_t> good = encodeConvSpec(testSpec());
  REQUIRE(decodeConvSpec(good, error).has_value());

  std::vector<int64_t> p = good;
  p.resize(19);
  CHECK(refuse(p).find("22 params") != std::string::npos);
  p = good;
  p[17] = 2; // residual
  CHECK(refuse(p).find("residual") != std::string::npos);
  p = good;
  p[21] = 3; // channelsLast
  CHECK(refuse(p).find("channelsLast") != std::string::npos);
  p = good;
  p[14] = 5; // OH
  CHECK(refuse(p).find("gives 6x6") != std::string::npos);
  p = good;
  p[13] = 3; // group does not divide C = 4
  CHECK(refuse(p).find("multiples of group") != std::string::npos);
  p = good;
  p[7] = -1; // padH
  CHECK(refuse(p).find("padH") != std::string::npos);
  p = good;
  p[0] = int64_t(1) << 31; // N beyond int32
  CHECK(refuse(p).find("N = ") != std::string::npos);
  p = good;
  p[0] = 1 << 26; // x of 2^26 * 144 elements
  CHECK(refuse(p).find("2^31") != std::string::npos);
  p = good;
  p[19] = 8;
  CHECK(refuse(p).find("not a cuDNN forward algorithm") != std::string::npos);
  p = good;
  p[19] = int64_t(1) << 40;
  CHECK(refuse(p).find("algo") != std::string::npos);
  p = good;
  p[18] = 0; // no relu: identity, algo 1 only
  CHECK(decodeConvSpec(p, error).has_value());
  p[19] = 0;
  CHECK(refuse(p).find("IMPLICIT_PRECOMP_GEMM") != std::string::npos);
}

TEST_CASE("artifact with a library kernel round trip", "[runtime]") {
  for (bool generated : {false, true}) {
    INFO("with a generated kernel: " << generated);
    ArtifactContents c = libraryContents(generated);
    std::vector<uint8_t> bytes = serializeArtifact(c);
    REQUIRE(serializeArtifact(c) == bytes); // deterministic
    std::string error;
    auto a = parseArtifact(bytes, error);
    INFO(error);
    REQUIRE(a.has_value());
    const KernelLaunch &k = a->manifest.kernels[0];
    CHECK(k.isLibrary());
    CHECK(k.library == "cudnn.conv");
    CHECK(k.libraryParams == encodeConvSpec(testSpec()));
    CHECK(k.workspaceBytes == 4096);
    CHECK(k.args == c.manifest.kernels[0].args);
    CHECK(k.outputs == std::vector<int>{4});
    CHECK(k.cubins.empty());
    CHECK(k.source.size == 0);
    CHECK(a->source(0).empty());
    if (generated) {
      const KernelLaunch &g = a->manifest.kernels[1];
      CHECK_FALSE(g.isLibrary());
      CHECK(g.libraryParams.empty());
      CHECK(g.workspaceBytes == 0);
      CHECK(g.cubins.size() == 1);
    } else {
      CHECK(a->manifest.archs.empty());
    }
    CHECK(serializeArtifact(contentsOf(*a)) == bytes);

    // The fields are in the manifest JSON.
    for (const auto &[name, data] : sectionsOf(bytes))
      if (name == "manifest") {
        Json j = Json::parse(data.begin(), data.end());
        CHECK(j["kernels"][0]["library"] == "cudnn.conv");
        CHECK(j["kernels"][0]["libraryParams"].size() == kConvSpecParams);
        CHECK(j["kernels"][0]["workspaceBytes"] == 4096);
      }
  }
}

TEST_CASE("a library step's generated alternative round-trips and is checked",
          "[runtime]") {
  // libraryContents(true) and a generated kernel that writes y as the
  // library call does: the step's alternative for runs without a graph.
  ArtifactContents c = libraryContents(true);
  Manifest &m = c.manifest;
  m.kernels.push_back(kernel("conv_alt", {0, 2, 3, 1, 4}, {4}));
  c.sources.push_back("extern \"C\" __global__ void conv_alt() {}\n");
  c.cubins.push_back({{"sm_90", fakeCubin("conv_alt", "sm_90")}});
  m.steps[0].hostKernel = 2;
  std::vector<uint8_t> bytes = serializeArtifact(c);
  std::string error;
  auto a = parseArtifact(bytes, error);
  INFO(error);
  REQUIRE(a.has_value());
  CHECK(a->manifest.steps[0].hostKernel == 2);
  CHECK(a->manifest.steps[1].hostKernel == -1);
  CHECK(serializeArtifact(contentsOf(*a)) == bytes);
  auto rejected = [&]() { return rejection(serializeArtifact(c)); };
  SECTION("on a generated step") {
    m.steps[0].hostKernel = -1;
    m.steps[1].hostKernel = 2;
    CHECK(rejected().find("steps[1].hostKernel") != std::string::npos);
  }
  SECTION("a library call as the alternative") {
    m.kernels[2] = m.kernels[0];
    m.kernels[2].name = "conv1";
    c.sources[2] = "";
    c.cubins[2] = {};
    CHECK(rejected().find("a generated kernel that writes the library "
                          "call's output") != std::string::npos);
  }
  SECTION("an alternative that writes another tensor") {
    m.kernels[2].outputs = {5};
    m.kernels[2].args = {4, 5};
    CHECK(rejected().find("steps[0].hostKernel") != std::string::npos);
  }
  SECTION("an alternative that reads what the library call does not") {
    m.kernels[2].args = {0, 2, 3, 5, 4}; // the output in place of z
    CHECK(rejected().find("touches tensor 5") != std::string::npos);
  }
  SECTION("past the kernels") {
    std::string e = rejection(
        withManifest([](Json &j) { j["steps"][0]["hostKernel"] = 9; }, &c));
    CHECK(e.find("steps[0].hostKernel") != std::string::npos);
  }
}

TEST_CASE("a manifest without the library fields has generated kernels",
          "[runtime]") {
  // As written before the fields existed: they are optional.
  std::string error;
  auto a = parseArtifact(withManifest([](Json &j) {
                           for (Json &k : j["kernels"]) {
                             k.erase("library");
                             k.erase("libraryParams");
                             k.erase("workspaceBytes");
                           }
                         }),
                         error);
  INFO(error);
  REQUIRE(a.has_value());
  for (const KernelLaunch &k : a->manifest.kernels) {
    CHECK_FALSE(k.isLibrary());
    CHECK(k.libraryParams.empty());
  }
}

TEST_CASE("a manifest without the work and ceilings reads them as unknown",
          "[runtime]") {
  // As written before the fields existed (API version 2): 0 and "".
  std::string error;
  auto a = parseArtifact(withManifest([](Json &j) {
                           j.erase("target");
                           for (Json &k : j["kernels"]) {
                             k.erase("flops");
                             k.erase("bytes");
                           }
                         }),
                         error);
  INFO(error);
  REQUIRE(a.has_value());
  CHECK(a->manifest.target.empty());
  CHECK(a->manifest.peakFlops == 0);
  CHECK(a->manifest.bandwidth == 0);
  for (const KernelLaunch &k : a->manifest.kernels) {
    CHECK(k.flops == 0);
    CHECK(k.bytes == 0);
  }
}

TEST_CASE("the precision round-trips, defaults to fp32 and is checked",
          "[runtime]") {
  ArtifactContents c = sampleContents();
  c.manifest.precision = "bf16";
  std::string error;
  auto a = parseArtifact(serializeArtifact(c), error);
  INFO(error);
  REQUIRE(a.has_value());
  CHECK(a->manifest.precision == "bf16");
  a = parseArtifact(withManifest([](Json &j) { j.erase("precision"); }), error);
  REQUIRE(a.has_value());
  CHECK(a->manifest.precision == "fp32");
  error = rejection(withManifest([](Json &j) { j["precision"] = "fp8"; }));
  CHECK(error.find("precision 'fp8'") != std::string::npos);
}

TEST_CASE("library specs carry their math; older ones decode as fp32",
          "[runtime]") {
  std::string error;
  ConvSpec c = testSpec();
  c.math = LibraryMath::Fp16;
  std::vector<int64_t> p = encodeConvSpec(c);
  REQUIRE(p.size() == kConvSpecParams);
  CHECK(p[20] == 2);
  auto conv = decodeConvSpec(p, error);
  REQUIRE(conv.has_value());
  CHECK(conv->math == LibraryMath::Fp16);
  CHECK(conv->xBytes() == testSpec().xBytes() / 2);
  CHECK(describeConvSpec(*conv).find(" fp16 ") != std::string::npos);
  p.resize(20); // as written before the math was
  conv = decodeConvSpec(p, error);
  REQUIRE(conv.has_value());
  CHECK(conv->math == LibraryMath::Fp32);
  p.push_back(4);
  CHECK_FALSE(decodeConvSpec(p, error));
  CHECK(error.find("math (param 20) 4") != std::string::npos);

  GemmSpec g;
  g.M = 128, g.N = 2304, g.K = 768, g.transB = true, g.bias = true;
  g.math = LibraryMath::Bf16;
  std::vector<int64_t> q = encodeGemmSpec(g);
  REQUIRE(q.size() == kGemmSpecParams);
  auto gemm = decodeGemmSpec(q, error);
  INFO(error);
  REQUIRE(gemm.has_value());
  CHECK(*gemm == g);
  CHECK(gemm->aBytes() == 2 * 128 * 768);
  CHECK(gemm->bBytes() == 2 * 768 * 2304);
  CHECK(gemm->biasBytes() == 2 * 2304);
  CHECK(describeGemmSpec(*gemm).find(" bf16 ") != std::string::npos);
  q.pop_back();
  gemm = decodeGemmSpec(q, error);
  REQUIRE(gemm.has_value());
  CHECK(gemm->math == LibraryMath::Fp32);
  CHECK(gemm->yBytes() == 4 * 128 * 2304);
  q.push_back(-1);
  CHECK_FALSE(decodeGemmSpec(q, error));
  CHECK(error.find("math -1") != std::string::npos);

  // The activation: 0 none, 1 relu (what artifacts before GELU hold), 2
  // cuBLASLt's GELU; nothing else.
  g.act = GemmAct::GeluTanh;
  q = encodeGemmSpec(g);
  CHECK(q[11] == 2);
  gemm = decodeGemmSpec(q, error);
  REQUIRE(gemm.has_value());
  CHECK(gemm->act == GemmAct::GeluTanh);
  CHECK(describeGemmSpec(*gemm).find(" gelu") != std::string::npos);
  q[11] = 1;
  CHECK(decodeGemmSpec(q, error)->act == GemmAct::Relu);
  q[11] = 3;
  CHECK_FALSE(decodeGemmSpec(q, error));
  CHECK(error.find("activation 3") != std::string::npos);
}

TEST_CASE("a programmatic launch may follow a library call", "[runtime]") {
  // griddepcontrol.wait awaits the library's last kernel like any other.
  ArtifactContents c = libraryContents(true);
  c.manifest.steps[1].pdl = true;
  std::string error;
  auto a = parseArtifact(serializeArtifact(c), error);
  INFO(error);
  REQUIRE(a);
  CHECK(a->manifest.steps[1].pdl);
  // Not after a copy: there is no kernel whose completion it awaits.
  c.manifest.steps.insert(c.manifest.steps.begin() + 1, Step{-1, 4, 5});
  CHECK(rejection(serializeArtifact(c)).find("programmatic") !=
        std::string::npos);
}

TEST_CASE("library kernel validation", "[runtime]") {
  ArtifactContents c = libraryContents(true);
  KernelLaunch &k = c.manifest.kernels[0];
  auto rejected = [&]() { return rejection(serializeArtifact(c)); };
  SECTION("unknown library") {
    k.library = "cublas.gemm";
    std::string error = rejected();
    CHECK(error.find("kernels[0].library") != std::string::npos);
    CHECK(error.find("unknown library \"cublas.gemm\"") != std::string::npos);
  }
  SECTION("too few params") {
    k.libraryParams.resize(19);
    std::string error = rejected();
    CHECK(error.find("kernels[0].libraryParams") != std::string::npos);
    CHECK(error.find("not 19") != std::string::npos);
  }
  SECTION("params that are no convolution") {
    k.libraryParams[15] = 7; // OW
    std::string error = rejected();
    CHECK(error.find("kernels[0].libraryParams") != std::string::npos);
    CHECK(error.find("6x7") != std::string::npos);
  }
  SECTION("identity with another algo") {
    k.libraryParams[18] = 0;
    k.libraryParams[19] = 6;
    CHECK(rejected().find("IMPLICIT_PRECOMP_GEMM") != std::string::npos);
  }
  SECTION("params of the wrong type") {
    std::string error = rejection(withManifest([](Json &j) {
      j["kernels"][0]["library"] = "cudnn.conv";
      j["kernels"][0]["libraryParams"] = Json::array({1, "2"});
    }));
    CHECK(error.find("kernels[0].libraryParams[1]") != std::string::npos);
    error = rejection(
        withManifest([](Json &j) { j["kernels"][0]["library"] = 3; }));
    CHECK(error.find("kernels[0].library") != std::string::npos);
    error = rejection(
        withManifest([](Json &j) { j["kernels"][0]["workspaceBytes"] = -1; }));
    CHECK(error.find("kernels[0].workspaceBytes") != std::string::npos);
  }
  SECTION("an arg missing") {
    k.args = {0, 2, 3, 4}; // no z, but the spec has a residual
    std::string error = rejected();
    CHECK(error.find("kernels[0].args") != std::string::npos);
    CHECK(error.find("takes 5 args (x, w, bias, z, y), not 4") !=
          std::string::npos);
  }
  SECTION("an arg of the wrong size") {
    c.manifest.tensors[2].shape = {8, 4, 3, 2};
    std::string error = rejected();
    CHECK(error.find("kernels[0].args[1]") != std::string::npos);
    CHECK(error.find("768 bytes") != std::string::npos);
    CHECK(error.find("needs 1152") != std::string::npos);
  }
  SECTION("bias and z swapped") {
    k.args = {0, 2, 1, 3, 4};
    CHECK(rejected().find("kernels[0].args[2]") != std::string::npos);
  }
  SECTION("an arg that is not float32") {
    c.manifest.tensors[3].dtype = "int32";
    CHECK(rejected().find("float32") != std::string::npos);
  }
  SECTION("fp16 math over float32 tensors") {
    std::string why;
    ConvSpec s = *decodeConvSpec(k.libraryParams, why);
    s.math = LibraryMath::Fp16;
    k.libraryParams = encodeConvSpec(s);
    std::string error = rejected();
    CHECK(error.find("takes float16") != std::string::npos);
  }
  SECTION("a second output") {
    k.outputs = {4, 1};
    CHECK(rejected().find("kernels[0].outputs") != std::string::npos);
    k.outputs = {1}; // writes an input
    CHECK(rejected().find("kernels[0].outputs") != std::string::npos);
  }
  SECTION("z is y") {
    // z a view of y: cuDNN would read what it writes.
    c.manifest.tensors[1] = tensor("zy", {1, 8, 6, 6}, TensorKind::View);
    c.manifest.tensors[1].viewOf = 4;
    c.manifest.tensors.push_back(tensor("z", {1}, TensorKind::Input));
    c.manifest.tensors.back().index = 1;
    c.manifest.inputs[1] = 6;
    std::string error = rejected();
    CHECK(error.find("kernels[0].args[3]") != std::string::npos);
    CHECK(error.find("shares its memory with y") != std::string::npos);
  }
  SECTION("a library kernel with a CUBIN or a source") {
    c.cubins[0]["sm_90"] = fakeCubin("conv0", "sm_90");
    CHECK(rejected().find("kernels[0].cubins") != std::string::npos);
    c.cubins[0].clear();
    c.sources[0] = "extern \"C\" __global__ void conv0() {}";
    CHECK(rejected().find("kernels[0].source") != std::string::npos);
  }
  SECTION("a generated kernel with library params or a workspace") {
    c.manifest.kernels[1].libraryParams = {1};
    CHECK(rejected().find("kernels[1].libraryParams") != std::string::npos);
    c.manifest.kernels[1].libraryParams.clear();
    c.manifest.kernels[1].workspaceBytes = 256;
    CHECK(rejected().find("kernels[1].workspaceBytes") != std::string::npos);
  }
  SECTION("a generated kernel still needs every arch") {
    c.cubins[1].clear();
    CHECK(rejected().find("has no CUBIN for sm_90") != std::string::npos);
  }
}

TEST_CASE("cuDNN convolution without a device fails cleanly", "[runtime]") {
  std::string error;
  ConvSpec bad = testSpec();
  bad.OW = 5;
  CHECK(CudnnConv::create(bad, error) == nullptr);
  CHECK(error.find("gives 6x6") != std::string::npos);

  ConvSpec identity = testSpec();
  identity.relu = false;
  identity.algo = 0;
  error.clear();
  CHECK(CudnnConv::create(identity, error) == nullptr);
  CHECK(error.find("IMPLICIT_PRECOMP_GEMM") != std::string::npos);

  // Without a bias the wrapper allocates zeros on the device, which needs a
  // current CUDA context: none here, with or without a GPU.
  ConvSpec noBias = testSpec();
  noBias.bias = false;
  error.clear();
  CHECK(CudnnConv::create(noBias, error) == nullptr);
  INFO(error);
  CHECK_FALSE(error.empty());

  // With a bias no device is needed: it fails only without cuDNN.
  error.clear();
  auto conv = CudnnConv::create(testSpec(), error);
  if (!conv)
    CHECK(error.find("cuDNN") != std::string::npos);
  else
    CHECK(conv->spec() == testSpec());

  error.clear();
  auto handle = CudnnHandle::create(error);
  if (!handle)
    CHECK_FALSE(error.empty());
}

TEST_CASE("C API: a model with a cuDNN convolution", "[runtime]") {
  ConvSpec s = testSpec();
  ArtifactContents c = libraryContents(false);
  std::vector<uint8_t> bytes = serializeArtifact(c);
  cuts_model *model = nullptr;
  cuts_status st =
      cuts_model_load_memory(bytes.data(), bytes.size(), nullptr, &model);
  INFO(cuts_last_error());
  if (st != CUTS_OK) {
    // No GPU (as here): the driver fails first; a GPU without cuDNN:
    // CUTS_ERROR_CUDA naming it.
    CHECK((st == CUTS_ERROR_NO_DEVICE || st == CUTS_ERROR_CUDA));
    CHECK(std::string(cuts_last_error()).size() > 0);
    if (st == CUTS_ERROR_CUDA)
      CHECK(std::string(cuts_last_error()).find("cudnn.conv") !=
            std::string::npos);
    CHECK(model == nullptr);
    return;
  }
  // On a GPU host with cuDNN: run it, with and without a CUDA graph,
  // against the CPU reference.
  const char *name = nullptr;
  REQUIRE(cuts_model_kernel(model, 0, &name, nullptr, nullptr) == CUTS_OK);
  CHECK(std::string(name) == "cudnn.conv");
  double flops = 0, bytesMoved = 0;
  REQUIRE(cuts_model_kernel_work(model, 0, &flops, &bytesMoved) == CUTS_OK);
  CHECK(flops == 1234);
  CHECK(bytesMoved == 5678);
  CHECK(cuts_model_kernel_work(model, 1, &flops, nullptr) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(cuts_last_error()).find("kernel index 1") !=
        std::string::npos);
  const char *target = nullptr;
  double peak = -1;
  REQUIRE(cuts_model_target(model, &target, &peak, nullptr) == CUTS_OK);
  CHECK(std::string(target).empty()); // the test's artifact names none
  CHECK(peak == 0);
  std::vector<float> x(size_t(s.xBytes() / 4)), z(size_t(s.yBytes() / 4));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(int(i * 13 % 11) - 5) / 4.0f;
  for (size_t i = 0; i < z.size(); ++i)
    z[i] = float(int(i * 7 % 5) - 2) / 2.0f;
  std::vector<float> w(size_t(s.wBytes() / 4)), b(size_t(s.K));
  std::memcpy(w.data(), c.weights.data(), s.wBytes());
  std::memcpy(b.data(), c.weights.data() + 1280, s.biasBytes());
  std::vector<float> want = referenceConv(s, x, w, b, z);
  for (int graph : {0, 1}) {
    cuts_session *session = nullptr;
    REQUIRE(cuts_session_create(model, nullptr, graph, &session) == CUTS_OK);
    std::vector<float> y(want.size(), -1.0f);
    int64_t xs[] = {s.N, s.C, s.H, s.W}, ys[] = {s.N, s.K, s.OH, s.OW};
    cuts_binding in[] = {{"x", CUTS_FLOAT32, 4, xs, x.data()},
                         {"z", CUTS_FLOAT32, 4, ys, z.data()}};
    cuts_binding out[] = {{"y", CUTS_FLOAT32, 4, ys, y.data()}};
    for (int run = 0; run < 2; ++run) { // capture, then replay
      REQUIRE(cuts_session_run_host(session, in, 2, out, 1) == CUTS_OK);
      CHECK(relativeL2(y, want) <= 1e-5);
    }
    float ms = 0;
    CHECK(cuts_session_profile(session, 3, &ms) == CUTS_OK);
    CHECK(cuts_session_benchmark(session, 1, 1, &ms) == CUTS_OK);
    cuts_session_free(session);
  }
  cuts_model_free(model);
}

//===- Dtypes other than float32 ------------------------------------------===//

namespace {

/// BERT's interface in miniature: int64 ids and mask in, a float32 output
/// and a bool output, an int64 weight (an index table), a bool
/// intermediate.
///   tensors: 0 input_ids, 1 attention_mask (int64 [2, 8]), 2 positions
///   (int64 [8], weight), 3 keep (bool [2, 8]), 4 y (float32 [2, 8, 4]),
///   5 pad (bool [2, 8])
ArtifactContents typedContents() {
  ArtifactContents c;
  Manifest &m = c.manifest;
  m.model = "typed";
  m.producer = "cuts test";
  m.archs = {"sm_90"};
  auto add = [&](const std::string &name, std::vector<int64_t> shape,
                 TensorKind kind, const std::string &dtype, int index = -1) {
    m.tensors.push_back(tensor(name, std::move(shape), kind));
    m.tensors.back().dtype = dtype;
    m.tensors.back().index = index;
  };
  add("input_ids", {2, 8}, TensorKind::Input, "int64", 0);
  add("attention_mask", {2, 8}, TensorKind::Input, "int64", 1);
  add("positions", {8}, TensorKind::Weight, "int64");
  add("keep", {2, 8}, TensorKind::Intermediate, "bool");
  add("y", {2, 8, 4}, TensorKind::Output, "float32", 0);
  add("pad", {2, 8}, TensorKind::Output, "bool", 1);
  m.inputs = {0, 1};
  m.outputs = {4, 5};
  m.kernels.push_back(kernel("mask", {1, 3}, {3}));
  m.kernels.push_back(kernel("embed", {0, 2, 3, 4}, {4}));
  m.kernels.push_back(kernel("pad", {3, 5}, {5}));
  m.steps = {Step{0, -1, -1}, Step{1, -1, -1}, Step{2, -1, -1}};
  c.weights.assign(64, 0);
  for (int64_t i = 0; i < 8; ++i)
    std::memcpy(c.weights.data() + 8 * i, &i, 8);
  for (const KernelLaunch &k : m.kernels) {
    c.sources.push_back("extern \"C\" __global__ void " + k.name + "() {}\n");
    c.cubins.push_back({{"sm_90", fakeCubin(k.name, "sm_90")}});
  }
  return c;
}

} // namespace

TEST_CASE("C API dtypes: values, sizes and names", "[runtime]") {
  // CUTS_FLOAT32 keeps its value; the others are ONNX's data types.
  CHECK(int(CUTS_FLOAT32) == 1);
  CHECK(int(CUTS_INT64) == 7);
  CHECK(int(CUTS_BOOL) == 9);
  CHECK(CUTS_API_VERSION >= 2);
  struct {
    cuts_dtype d;
    const char *name;
    size_t size;
  } all[] = {{CUTS_FLOAT32, "float32", 4},   {CUTS_FLOAT16, "float16", 2},
             {CUTS_BFLOAT16, "bfloat16", 2}, {CUTS_FLOAT64, "float64", 8},
             {CUTS_INT8, "int8", 1},         {CUTS_UINT8, "uint8", 1},
             {CUTS_INT16, "int16", 2},       {CUTS_INT32, "int32", 4},
             {CUTS_INT64, "int64", 8},       {CUTS_BOOL, "bool", 1}};
  for (const auto &x : all) {
    INFO(x.name);
    CHECK(std::string(cuts_dtype_name(x.d)) == x.name);
    CHECK(cuts_dtype_size(x.d) == x.size);
    CHECK(dtypeBytes(x.name) == x.size);
    CHECK(apiDtype(x.name) == x.d);
  }
  CHECK(cuts_dtype_size(cuts_dtype(42)) == 0);
  CHECK(std::string(cuts_dtype_name(cuts_dtype(0))) == "unknown");
  CHECK_FALSE(apiDtype("complex64"));
  CHECK(describeDtype(CUTS_INT64) == "int64 (CUTS_INT64)");
  CHECK(describeDtype(cuts_dtype(42)) == "42 (not a cuts_dtype)");
}

TEST_CASE("int64 and bool tensors: sizes, weights and the memory plan",
          "[runtime]") {
  ArtifactContents c = typedContents();
  std::string error;
  auto a = parseArtifact(serializeArtifact(c), error);
  INFO(error);
  REQUIRE(a);
  const Manifest &m = a->manifest;
  CHECK(m.tensors[0].dtype == "int64");
  CHECK(m.tensors[0].bytes() == 2 * 8 * 8);
  CHECK(m.tensors[2].bytes() == 64);
  CHECK(m.tensors[3].bytes() == 16); // one byte per bool
  CHECK(m.tensors[5].bytes() == 16);
  MemoryPlan plan = planMemory(m);
  CHECK(plan.offset[3] == 0);
  CHECK(plan.arenaBytes == 16);

  // An int64 weight needs 8 bytes an element in the weights section.
  c.weights.resize(32);
  error = rejection(serializeArtifact(c));
  CHECK(error.find("tensors[2].weightOffset") != std::string::npos);
  CHECK(error.find("[0, 64)") != std::string::npos);

  // A copy between tensors of equal elements but different sizes.
  c = typedContents();
  c.manifest.steps.push_back(Step{-1, 3, 4});
  error = rejection(serializeArtifact(c));
  CHECK(error.find("differ in size (16 and 256 bytes)") != std::string::npos);

  // An unknown dtype is named.
  c = typedContents();
  c.manifest.tensors[3].dtype = "int4";
  error = rejection(serializeArtifact(c));
  CHECK(error.find("unknown dtype \"int4\"") != std::string::npos);
}

TEST_CASE("bindings are checked against the model's dtypes", "[runtime]") {
  ArtifactContents c = typedContents();
  const Manifest &m = c.manifest;
  int64_t ids[16] = {0}, mask[16] = {0};
  float y[64];
  bool pad[16];
  int64_t s2[] = {2, 8}, s3[] = {2, 8, 4};
  std::vector<void *> data;
  std::string error;
  cuts_binding in[] = {{"attention_mask", CUTS_INT64, 2, s2, mask},
                       {"input_ids", CUTS_INT64, 2, s2, ids}};
  cuts_binding out[] = {{"y", CUTS_FLOAT32, 3, s3, y},
                        {"pad", CUTS_BOOL, 2, s2, pad}};
  REQUIRE(checkBindings(m, in, 2, true, data, error));
  CHECK(data == std::vector<void *>{ids, mask}); // the model's order
  REQUIRE(checkBindings(m, out, 2, false, data, error));
  CHECK(data == std::vector<void *>{y, pad});

  SECTION("a float32 buffer for an int64 input") {
    in[1].dtype = CUTS_FLOAT32;
    CHECK_FALSE(checkBindings(m, in, 2, true, data, error));
    CHECK(error == "input \"input_ids\": dtype float32 (CUTS_FLOAT32) given, "
                   "the model's is int64 (CUTS_INT64)");
  }
  SECTION("an int32 mask") {
    in[0].dtype = CUTS_INT32;
    CHECK_FALSE(checkBindings(m, in, 2, true, data, error));
    CHECK(error.find("input \"attention_mask\": dtype int32 (CUTS_INT32)") !=
          std::string::npos);
  }
  SECTION("a value that is no cuts_dtype") {
    out[1].dtype = cuts_dtype(8);
    CHECK_FALSE(checkBindings(m, out, 2, false, data, error));
    CHECK(error == "output \"pad\": dtype 8 (not a cuts_dtype) given, the "
                   "model's is bool (CUTS_BOOL)");
  }
  SECTION("a uint8 buffer for a bool output") {
    out[1].dtype = CUTS_UINT8;
    CHECK_FALSE(checkBindings(m, out, 2, false, data, error));
    CHECK(error.find("the model's is bool (CUTS_BOOL)") != std::string::npos);
  }
  SECTION("the other checks still name the tensor") {
    int64_t wrong[] = {2, 9};
    in[0].shape = wrong;
    CHECK_FALSE(checkBindings(m, in, 2, true, data, error));
    CHECK(error == "input \"attention_mask\": expected shape [2, 8], given "
                   "[2, 9]");
    CHECK_FALSE(checkBindings(m, in, 1, true, data, error));
    CHECK(error.find("the model has 2 inputs") != std::string::npos);
  }
}

TEST_CASE("device bindings must be 16-byte aligned", "[runtime]") {
  ArtifactContents c = typedContents();
  const Manifest &m = c.manifest;
  alignas(16) float y[64 + 4];
  alignas(16) bool pad[32];
  std::string error;
  CHECK(checkAlignment(m, {y, pad}, false, error));
  CHECK(checkAlignment(m, {y + 4, pad + 16}, false, error));
  CHECK_FALSE(checkAlignment(m, {y + 1, pad}, false, error));
  CHECK(error.find("output \"y\": data 0x") == 0);
  CHECK(error.find("is not 16-byte aligned") != std::string::npos);
  CHECK_FALSE(checkAlignment(m, {y, pad + 8}, false, error));
  CHECK(error.find("output \"pad\"") == 0);
}

TEST_CASE("benchmark inputs hold values valid for any model", "[runtime]") {
  auto as = [](const std::vector<uint8_t> &b, auto v) {
    REQUIRE(b.size() == sizeof v);
    std::memcpy(&v, b.data(), sizeof v);
    return v;
  };
  CHECK(as(fillElement("float32"), float()) == 0.5f);
  CHECK(as(fillElement("float64"), double()) == 0.5);
  CHECK(as(fillElement("float16"), uint16_t()) == 0x3800);
  CHECK(as(fillElement("bfloat16"), uint16_t()) == 0x3F00);
  CHECK(as(fillElement("int64"), int64_t()) == 0); // an index into any table
  CHECK(as(fillElement("int32"), int32_t()) == 0);
  CHECK(fillElement("bool") == std::vector<uint8_t>{1});
  CHECK(fillElement("uint8") == std::vector<uint8_t>{0});
  CHECK(fillElement("nonsense").empty());
}

TEST_CASE("C API: a model with int64 inputs loads up to the device",
          "[runtime]") {
  std::vector<uint8_t> bytes = serializeArtifact(typedContents());
  cuts_model *model = nullptr;
  cuts_status s =
      cuts_model_load_memory(bytes.data(), bytes.size(), nullptr, &model);
  INFO(cuts_last_error());
  // Version 1 refused it (CUTS_ERROR_BAD_ARTIFACT, "float32 tensors
  // only"); now only the device (none here, or the fake CUBINs) stops it.
  CHECK((s == CUTS_ERROR_NO_DEVICE || s == CUTS_ERROR_NO_CUBIN ||
         s == CUTS_ERROR_CUDA));
  CHECK(model == nullptr);
}

//===- Batch profiles -----------------------------------------------------===//

namespace {

/// One plan of a two-kernel model at `batch`: x [batch, 4] (batched) and
/// s [4] (not) in, y [batch, 4] out; `scale` is the same kernel in every
/// plan, `add` differs.
Manifest profilePlan(int64_t batch) {
  Manifest m;
  m.model = "profiles";
  m.producer = "cuts test";
  m.archs = {"sm_90"};
  m.batch = batch;
  m.tensors.push_back(tensor("x", {batch, 4}, TensorKind::Input));
  m.tensors.back().index = 0;
  m.tensors.back().batchAxis = 0;
  m.tensors.push_back(tensor("s", {4}, TensorKind::Input));
  m.tensors.back().index = 1;
  m.tensors.push_back(tensor("w", {4}, TensorKind::Weight));
  m.tensors.push_back(tensor("t", {batch, 4}, TensorKind::Intermediate));
  m.tensors.push_back(tensor("y", {batch, 4}, TensorKind::Output));
  m.tensors.back().index = 0;
  m.tensors.back().batchAxis = 0;
  m.inputs = {0, 1};
  m.outputs = {4};
  m.kernels.push_back(kernel("add", {0, 2, 3}, {3}));
  m.kernels.push_back(kernel("scale", {3, 1, 4}, {4}));
  m.steps = {Step{0, -1, -1}, Step{1, -1, -1}};
  return m;
}

ArtifactContents profileContents(std::vector<int64_t> batches) {
  ArtifactContents c;
  auto code = [](const Manifest &m, size_t k) {
    std::string src = "extern \"C\" __global__ void " + m.kernels[k].name +
                      "() {} // " +
                      (k == 0 ? std::to_string(m.batch) : "any batch") + "\n";
    return std::make_pair(
        src, std::map<std::string, std::vector<char>>{
                 {"sm_90", std::vector<char>(src.begin(), src.end())}});
  };
  for (size_t p = 0; p < batches.size(); ++p) {
    Manifest m = profilePlan(batches[p]);
    std::vector<std::string> sources;
    std::vector<std::map<std::string, std::vector<char>>> cubins;
    for (size_t k = 0; k < m.kernels.size(); ++k) {
      auto [src, bin] = code(m, k);
      sources.push_back(src);
      cubins.push_back(bin);
    }
    if (p == 0) {
      c.manifest = m, c.sources = sources, c.cubins = cubins;
    } else {
      c.profiles.push_back({m, sources, cubins});
    }
  }
  c.weights.assign(16, 1);
  return c;
}

} // namespace

TEST_CASE("batch profiles round-trip and share what is equal", "[runtime]") {
  std::string error;
  auto a = parseArtifact(serializeArtifact(profileContents({1, 4, 8})), error);
  REQUIRE(a);
  REQUIRE(a->profiles.size() == 2);
  std::vector<int64_t> batches;
  for (const Manifest *m : a->plans())
    batches.push_back(m->batch);
  CHECK(batches == std::vector<int64_t>{1, 4, 8});
  CHECK(a->sections.count("manifest.4"));
  CHECK(a->sections.count("manifest.8"));
  const Manifest &big = a->profiles[1];
  CHECK(big.tensors[0].shape == std::vector<int64_t>{8, 4});
  CHECK(big.tensors[0].batchAxis == 0);
  CHECK(big.tensors[1].batchAxis == -1);
  CHECK(big.archs == a->manifest.archs);
  // "scale" is one kernel in every plan: one source, one CUBIN.
  CHECK(big.kernels[1].source.offset == a->manifest.kernels[1].source.offset);
  CHECK(big.kernels[1].cubins.at("sm_90").offset ==
        a->manifest.kernels[1].cubins.at("sm_90").offset);
  CHECK(big.kernels[0].source.offset != a->manifest.kernels[0].source.offset);
  CHECK(a->source(big.kernels[0]).find("// 8") != std::string::npos);
  // Without profiles nothing changes: no batch, no batchAxis written.
  auto one = parseArtifact(serializeArtifact(sampleContents()), error);
  REQUIRE(one);
  CHECK(one->manifest.batch == 0);
  CHECK(one->profiles.empty());
  CHECK(one->plans().size() == 1);
}

TEST_CASE("batch profiles are validated against each other", "[runtime]") {
  auto reject = [](ArtifactContents c) {
    return rejection(serializeArtifact(c));
  };
  SECTION("a profile's input differs but for the batch") {
    ArtifactContents c = profileContents({1, 4});
    c.profiles[0].manifest.tensors[1].shape = {5};
    CHECK(reject(c) == "manifest.4: \"s\" differs from the first manifest's "
                       "but for the batch");
  }
  SECTION("a profile's batch at or below the first's") {
    ArtifactContents c = profileContents({4, 4});
    CHECK(reject(c).find("a batch profile needs a batch above the previous "
                         "profile's (4)") != std::string::npos);
  }
  SECTION("profiles of a plan without a batch") {
    ArtifactContents c = profileContents({1, 4});
    c.manifest = sampleContents().manifest;
    c.sources = sampleContents().sources, c.cubins = sampleContents().cubins;
    CHECK_FALSE(reject(c).empty());
  }
  SECTION("a batch axis on an intermediate") {
    ArtifactContents c = profileContents({2});
    c.manifest.tensors[3].batchAxis = 0;
    CHECK(reject(c).find("tensors[3].batchAxis: only an input or output") !=
          std::string::npos);
  }
  SECTION("a batched input whose axis 0 is not the batch") {
    ArtifactContents c = profileContents({2, 4});
    c.profiles[0].manifest.tensors[0].shape = {3, 4};
    c.profiles[0].manifest.tensors[3].shape = {3, 4};
    CHECK(reject(c).rfind("manifest.4: tensors[0].batchAxis: only an input "
                          "or output of a plan with a batch",
                          0) == 0);
  }
  SECTION("a profile section whose name is not its batch") {
    auto secs = sectionsOf(serializeArtifact(profileContents({1, 4})));
    for (auto &[name, bytes] : secs)
      if (name == "manifest.4")
        name = "manifest.6";
    CHECK(rejection(fileOf(secs)) == "manifest.6: its batch is 4");
    for (auto &[name, bytes] : secs)
      if (name == "manifest.6")
        name = "manifest.x";
    CHECK(rejection(fileOf(secs)) ==
          "section \"manifest.x\": not manifest.<batch>");
  }
}

TEST_CASE("a run's batch picks its plan and shapes its bindings", "[runtime]") {
  const Manifest big = profilePlan(8);
  std::string error;
  float x[32], s[4], y[32];
  int64_t x3[] = {3, 4}, x5[] = {5, 4}, s4[] = {4}, y3[] = {3, 4};
  cuts_binding in[] = {{"s", CUTS_FLOAT32, 1, s4, s},
                       {"x", CUTS_FLOAT32, 2, x3, x}};
  CHECK(bindingBatch(big, in, 2, 8, error) == 3);
  CHECK(choosePlan({1, 4, 8}, 3) == 1); // padded to 4
  CHECK(choosePlan({1, 4, 8}, 4) == 1);
  CHECK(choosePlan({1, 4, 8}, 5) == 2);
  CHECK(choosePlan({1, 4, 8}, 1) == 0);
  CHECK(choosePlan({0}, 0) == 0);
  const Manifest four = profilePlan(4);
  std::vector<void *> data;
  CHECK(checkBindings(four, in, 2, true, data, error, 3));
  cuts_binding out[] = {{"y", CUTS_FLOAT32, 2, y3, y}};
  CHECK(checkBindings(four, out, 1, false, data, error, 3));
  CHECK(bytesAtBatch(four.tensors[0], 3) == 3 * 4 * 4);
  CHECK(bytesAtBatch(four.tensors[1], 3) == 4 * 4); // not batched
  CHECK(bytesAtBatch(four.tensors[0], 0) == 4 * 4 * 4);
  SECTION("the output at another batch") {
    int64_t y4[] = {4, 4};
    out[0].shape = y4;
    CHECK_FALSE(checkBindings(four, out, 1, false, data, error, 3));
    CHECK(error == "output \"y\": expected shape [3, 4], given [4, 4]");
  }
  SECTION("a batch above the largest") {
    in[1].shape = x5;
    CHECK_FALSE(bindingBatch(big, in, 2, 4, error));
    CHECK(error == "input \"x\" has batch 5; the model serves batches 1 to 4 "
                   "(axis 0)");
  }
  SECTION("batch 0") {
    int64_t x0[] = {0, 4};
    in[1].shape = x0;
    CHECK_FALSE(bindingBatch(big, in, 2, 8, error));
  }
  SECTION("a plan without a batch") {
    CHECK(bindingBatch(sampleContents().manifest, in, 2, 0, error) == 0);
  }
}

TEST_CASE("a batch splits across a device list by shares", "[runtime]") {
  using V = std::vector<int64_t>;
  CHECK(splitBatch(10, {1, 1, 1}) == V{4, 3, 3});
  CHECK(splitBatch(2, {1, 1, 1}) == V{1, 1, 0}); // fewer rows than devices
  CHECK(splitBatch(7, {3, 1}) == V{5, 2});
  CHECK(splitBatch(64, {1, 1}) == V{32, 32});
  CHECK(splitBatch(0, {1, 2}) == V{0, 0});
  for (int64_t b = 1; b < 40; ++b) {
    V r = splitBatch(b, {0.5, 2, 1.25});
    CHECK(r[0] + r[1] + r[2] == b);
  }
}

TEST_CASE("C API: device lists are checked, and nothing stays loaded",
          "[runtime]") {
  std::vector<uint8_t> bytes = serializeArtifact(profileContents({1, 4}));
  cuts_model *m = nullptr;
  int devices[] = {0, 0};
  double shares[] = {1, 0};
  cuts_load_options o{};
  o.devices = devices, o.num_devices = -1;
  CHECK(cuts_model_load_memory(bytes.data(), bytes.size(), &o, &m) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(m == nullptr);
  o.num_devices = 2, o.device_shares = shares;
  CHECK(cuts_model_load_memory(bytes.data(), bytes.size(), &o, &m) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(cuts_last_error()) ==
        "device_shares[1] is not a positive number");
  o.device_shares = nullptr;
  o.weight_source = 7;
  CHECK(cuts_model_load_memory(bytes.data(), bytes.size(), &o, &m) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(cuts_last_error()) ==
        "weight_source 7 is none of CUTS_WEIGHTS_HOST, _PEER and _NCCL");
  o.weight_source = CUTS_WEIGHTS_PEER;
  // Here without a GPU: the first entry fails, named.
  cuts_status st = cuts_model_load_memory(bytes.data(), bytes.size(), &o, &m);
  if (st != CUTS_OK) {
    CHECK(std::string(cuts_last_error())
              .rfind("device 0 (entry 0 of the "
                     "device list): ",
                     0) == 0);
    CHECK(m == nullptr);
  } else {
    CHECK(cuts_model_num_devices(m) == 2);
    cuts_model_free(m);
  }
}

TEST_CASE("the weight codecs' CUBINs round-trip, for the manifest's archs "
          "only",
          "[runtime]") {
  std::string error;
  ArtifactContents c = profileContents({1, 4});
  c.codecs["sm_90"] = {'e', 'l', 'f'};
  auto a = parseArtifact(serializeArtifact(c), error);
  INFO(error);
  REQUIRE(a);
  uint64_t size = 0;
  const uint8_t *p = a->section("codec.sm_90", &size);
  REQUIRE(p);
  CHECK(std::string(p, p + size) == "elf");
  c.codecs["sm_80"] = {'x'}; // the writer lists sm_80 with no kernels' CUBIN
  a = parseArtifact(serializeArtifact(c), error);
  CHECK(!a);
  CHECK(error.find("sm_80") != std::string::npos);
}

TEST_CASE("weight codec ranges: fp32 weights packed, the rest raw, laid out "
          "apart and aligned",
          "[runtime]") {
  Artifact a;
  Manifest &m = a.manifest;
  auto weight = [&](const char *name, int64_t n, const char *dtype,
                    uint64_t offset) {
    m.tensors.push_back(tensor(name, {n}, TensorKind::Weight));
    m.tensors.back().dtype = dtype;
    m.tensors.back().weightOffset = offset;
  };
  weight("a", 1000, "float32", 0);  // [0, 4000)
  weight("a2", 500, "float32", 0);  // inside a: one range
  weight("b", 10, "int64", 4096);   // [4096, 4176): raw
  weight("c", 64, "float32", 4352); // [4352, 4608)
  weight("d", 64, "float32", 4608); // meets c: apart
  weight("e", 16, "float32", 8192); // shares bytes with f: raw
  weight("f", 8, "float16", 8200);  // [8200, 8216)
  weight("g", 7, "float32", 12288); // 7 values: a partial group
  m.tensors.push_back(tensor("x", {4}, TensorKind::Input));
  const CodecRanges r = codecRanges(a);
  auto pairs = [](const std::vector<ByteRange> &v) {
    std::vector<std::pair<uint64_t, uint64_t>> out;
    for (const ByteRange &x : v)
      out.emplace_back(x.offset, x.bytes);
    return out;
  };
  using P = std::vector<std::pair<uint64_t, uint64_t>>;
  CHECK(pairs(r.packed) == P{{0, 4000}, {4352, 256}, {4608, 256}, {12288, 28}});
  CHECK(pairs(r.raw) == P{{4096, 80}, {8192, 64}});
  CHECK(r.packedBytes() == 4540);
  CHECK(r.rawBytes() == 144);
  for (WeightCodec codec : {WeightCodec::ThreeToOne, WeightCodec::Bf16}) {
    const StagingLayout l = stagingLayout(r, codec);
    REQUIRE(l.raw.size() == 2);
    REQUIRE(l.packed.size() == 4);
    // Every piece aligned, in order, none overlapping the next.
    std::vector<std::pair<uint64_t, uint64_t>> pieces = {
        {l.table, sizeof(CodecTableEntry) * r.packed.size()}};
    for (size_t i = 0; i < 2; ++i)
      pieces.emplace_back(l.raw[i], r.raw[i].bytes);
    for (size_t i = 0; i < 4; ++i)
      pieces.emplace_back(l.packed[i],
                          encodedBytes(r.packed[i].bytes / 4, codec));
    pieces.emplace_back(l.side, 0);
    for (size_t i = 0; i < pieces.size(); ++i) {
      CHECK(pieces[i].first % 16 == 0);
      if (i > 0)
        CHECK(pieces[i - 1].first + pieces[i - 1].second <= pieces[i].first);
    }
    CHECK(l.bytes(5) == l.side + 60);
  }
  CHECK(encodedBytes(7, WeightCodec::ThreeToOne) == 12);
  CHECK(encodedBytes(7, WeightCodec::Bf16) == 14);
}

TEST_CASE("C API: a weight codec needs peer or NCCL weights and an "
          "artifact with the codecs",
          "[runtime]") {
  ArtifactContents c = profileContents({1, 4});
  std::vector<uint8_t> bare = serializeArtifact(c);
  c.codecs["sm_90"] = {'e', 'l', 'f'};
  std::vector<uint8_t> with = serializeArtifact(c);
  cuts_model *m = nullptr;
  int devices[] = {0, 0};
  cuts_load_options o{};
  o.devices = devices, o.num_devices = 2;
  o.weight_codec = 3;
  CHECK(cuts_model_load_memory(with.data(), with.size(), &o, &m) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(cuts_last_error()) ==
        "weight_codec 3 is none of CUTS_CODEC_NONE, _3TO1 and _BF16");
  o.weight_codec = CUTS_CODEC_3TO1;
  CHECK(cuts_model_load_memory(with.data(), with.size(), &o, &m) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(cuts_last_error()).find("needs weight_source") !=
        std::string::npos);
  o.weight_source = CUTS_WEIGHTS_PEER;
  CHECK(cuts_model_load_memory(bare.data(), bare.size(), &o, &m) ==
        CUTS_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(cuts_last_error()).find("has no weight codecs") !=
        std::string::npos);
  CHECK(m == nullptr);
}

TEST_CASE("a plan that combines rows runs only its own batch, and says why",
          "[runtime]") {
  ArtifactContents c = profileContents({1, 4});
  const std::string why = "cuts.reduce_mean (loc(\"mean\")) reduces over the "
                          "batch axis";
  c.manifest.mixesRows = why;
  c.profiles[0].manifest.mixesRows = why;
  std::string error;
  auto a = parseArtifact(serializeArtifact(c), error);
  INFO(error);
  REQUIRE(a);
  CHECK(a->manifest.mixesRows == why);
  const Manifest &four = a->profiles[0];
  CHECK(four.mixesRows == why);
  CHECK(runsBatch(four, 4, error));
  CHECK_FALSE(runsBatch(four, 3, error));
  CHECK(error.find("batch 3 would be padded to profile 4, but " + why) == 0);
  // Without the mark, padding is how every other batch runs.
  CHECK(runsBatch(profilePlan(4), 3, error));
}

namespace {

/// Rank `rank` of a 2-rank plan: y = k1(all-reduce(k0(x, w))).
Manifest rankPlan(int64_t rank) {
  Manifest m;
  m.model = "ranks";
  m.producer = "cuts test";
  m.archs = {"sm_90"};
  m.ranks = 2, m.rank = rank;
  m.tensors.push_back(tensor("x", {4}, TensorKind::Input));
  m.tensors.back().index = 0;
  m.tensors.push_back(tensor("w", {4}, TensorKind::Weight));
  m.tensors.back().weightOffset = rank == 0 ? 0 : 256;
  m.tensors.push_back(tensor("t", {4}, TensorKind::Intermediate));
  m.tensors.push_back(tensor("s", {4}, TensorKind::View));
  m.tensors.back().viewOf = 2;
  m.tensors.push_back(tensor("y", {4}, TensorKind::Output));
  m.tensors.back().index = 0;
  m.inputs = {0};
  m.outputs = {4};
  m.kernels.push_back(kernel("partial", {0, 1, 2}, {2}));
  m.kernels.push_back(kernel("finish", {3, 4}, {4}));
  Step reduce;
  reduce.from = 2, reduce.to = 3, reduce.collective = "all-reduce";
  reduce.engine = "nccl";
  m.steps = {Step{0, -1, -1}, reduce, Step{1, -1, -1}};
  return m;
}

ArtifactContents rankContents() {
  ArtifactContents c;
  auto code = [](const Manifest &m) {
    std::vector<std::string> sources;
    std::vector<std::map<std::string, std::vector<char>>> cubins;
    for (const KernelLaunch &k : m.kernels) {
      std::string src = "extern \"C\" __global__ void " + k.name + "() {}\n";
      sources.push_back(src);
      cubins.push_back({{"sm_90", std::vector<char>(src.begin(), src.end())}});
    }
    return std::make_pair(sources, cubins);
  };
  c.manifest = rankPlan(0);
  std::tie(c.sources, c.cubins) = code(c.manifest);
  Manifest one = rankPlan(1);
  auto [s1, b1] = code(one);
  c.rankPlans.push_back({one, s1, b1});
  c.weights.assign(512, 1);
  return c;
}

} // namespace

TEST_CASE("tensor-parallel plans round-trip with their all-reduce steps, "
          "and are checked",
          "[runtime]") {
  std::string error;
  auto a = parseArtifact(serializeArtifact(rankContents()), error);
  INFO(error);
  REQUIRE(a);
  REQUIRE(a->rankPlans.size() == 1);
  CHECK(a->manifest.ranks == 2);
  CHECK(a->rankPlans[0].rank == 1);
  CHECK(a->rankPlans[0].tensors[1].weightOffset == 256);
  CHECK(a->manifest.steps[1].collective == "all-reduce");
  CHECK(a->manifest.steps[1].engine == "nccl");
  CHECK(a->profiles.empty());

  ArtifactContents c = rankContents();
  c.rankPlans.clear(); // rank 1 missing
  CHECK_FALSE(parseArtifact(serializeArtifact(c), error));
  CHECK(error.find("has no \"manifest.rank1\" section") != std::string::npos);

  c = rankContents();
  c.manifest.ranks = 0, c.manifest.rank = 0; // a collective in a whole plan
  c.rankPlans.clear();
  CHECK_FALSE(parseArtifact(serializeArtifact(c), error));
  CHECK(error.find("only \"all-reduce\", in a plan of 2 or more ranks") !=
        std::string::npos);

  c = rankContents();
  c.manifest.steps[1].engine = "dma"; // not an engine the runtime has
  CHECK_FALSE(parseArtifact(serializeArtifact(c), error));
  CHECK(error.find("only \"nccl\"") != std::string::npos);

  c = rankContents();
  c.manifest.steps[0].engine = "nccl"; // on a kernel
  CHECK_FALSE(parseArtifact(serializeArtifact(c), error));
  CHECK(error.find("an engine without a collective") != std::string::npos);

  c = rankContents();
  c.manifest.steps[1].to = 4; // not in place
  CHECK_FALSE(parseArtifact(serializeArtifact(c), error));
  CHECK(error.find("tensor in place") != std::string::npos);

  c = rankContents(); // 16-bit partial sums are all-reduced too
  for (Manifest *m : {&c.manifest, &c.rankPlans[0].manifest})
    for (int t : {2, 3})
      m->tensors[size_t(t)].dtype = "float16";
  CHECK(parseArtifact(serializeArtifact(c), error));

  c = rankContents(); // an integer tensor has no all-reduce
  for (int t : {2, 3})
    c.manifest.tensors[size_t(t)].dtype = "int64";
  CHECK_FALSE(parseArtifact(serializeArtifact(c), error));
  CHECK(error.find("sums a float32, float16 or bfloat16 tensor") !=
        std::string::npos);

  c = rankContents();
  c.rankPlans[0].manifest.steps.erase( // rank 1 skips the all-reduce
      c.rankPlans[0].manifest.steps.begin() + 1);
  c.rankPlans[0].manifest.steps[1] = Step{1, -1, -1};
  CHECK_FALSE(parseArtifact(serializeArtifact(c), error));
  CHECK(error.find("collectives must match") != std::string::npos);

  c = rankContents();
  c.manifest.rank = 1; // the first plan is rank 0
  CHECK_FALSE(parseArtifact(serializeArtifact(c), error));
  CHECK(error.find("first plan is rank 0") != std::string::npos);

  c = rankContents();
  c.rankPlans[0].manifest.precision = "fp16"; // not the first plan's
  CHECK_FALSE(parseArtifact(serializeArtifact(c), error));
  CHECK(error.find("not rank 1 of the first plan's 2") != std::string::npos);

  // The runtime runs it on a device list of a rank an entry, and refuses
  // any other, naming why (before any device).
  std::vector<uint8_t> bytes = serializeArtifact(rankContents());
  cuts_model *m = nullptr;
  // Streamed weights come from a file on one device (before any device).
  {
    cuts_load_options o{};
    o.weight_budget = 1 << 20;
    CHECK(cuts_model_load_memory(bytes.data(), bytes.size(), &o, &m) ==
          CUTS_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(cuts_last_error()).find("load it with cuts_model_load") !=
          std::string::npos);
  }
  const int devices[3] = {0, 0, 0};
  for (int n : {0, 1, 3}) {
    INFO(n << " devices");
    cuts_load_options o{};
    o.devices = devices, o.num_devices = n;
    CHECK(cuts_model_load_memory(bytes.data(), bytes.size(), &o, &m) ==
          CUTS_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(cuts_last_error()).find("runs on a device list of 2") !=
          std::string::npos);
  }
}

TEST_CASE("C API: pipeline stage options are checked before any device",
          "[runtime][pipeline]") {
  std::vector<uint8_t> bytes = serializeArtifact(rankContents());
  cuts_model *m = nullptr;
  auto refused = [&](int stages, int stage, int devices, const char *why) {
    INFO(stages << " stages, stage " << stage << ", " << devices << " devices");
    const int list[2] = {0, 0};
    cuts_load_options o{};
    o.pipeline_stages = stages, o.pipeline_stage = stage;
    o.devices = list, o.num_devices = devices;
    CHECK(cuts_model_load_memory(bytes.data(), bytes.size(), &o, &m) ==
          CUTS_ERROR_INVALID_ARGUMENT);
    CHECK(std::string(cuts_last_error()).find(why) != std::string::npos);
    CHECK(m == nullptr);
  };
  refused(-1, 0, 0, "pipeline_stage 0 of pipeline_stages -1");
  refused(0, 1, 0, "pipeline_stage 1 of pipeline_stages 0");
  refused(2, 0, 2, "loads on one device");
  // A tensor-parallel plan is not cut (said before its device list is).
  refused(2, 2, 0, "pipeline stage 2 is not one of 2");
  refused(2, 1, 0, "a tensor-parallel model is not cut");
}

TEST_CASE("an artifact read without its weights: the rest in memory, the "
          "weights hashed in passing and left in the file",
          "[runtime][offload]") {
  ArtifactContents c = sampleContents();
  const int64_t floats = (int64_t(64) << 20) / 4 + 64; // past the threshold
  c.manifest.tensors.push_back(tensor("big", {floats}, TensorKind::Weight));
  c.manifest.tensors.back().weightOffset = 512;
  c.weights.resize(512 + size_t(floats) * 4);
  for (size_t i = 512; i < c.weights.size(); i += 4093)
    c.weights[i] = uint8_t(i);
  std::string path = tempPath("without-weights.cuts"), error;
  REQUIRE(writeArtifact(path, c, nullptr, error));
  auto whole = readArtifact(path, error);
  REQUIRE(whole);
  auto light = readArtifactWithoutWeights(path, error);
  INFO(error);
  REQUIRE(light);
  CHECK(light->weightsInFile.offset == whole->sections.at("weights").offset);
  CHECK(light->weightsInFile.size == c.weights.size());
  CHECK(light->bytes.size() < (size_t(1) << 20));
  uint64_t held = 1;
  light->section("weights", &held);
  CHECK(held == 0);
  CHECK(light->manifest.tensors.size() == whole->manifest.tensors.size());
  CHECK(light->manifest.tensors.back().weightOffset == 512);
  for (size_t k = 0; k < whole->manifest.kernels.size(); ++k)
    CHECK(light->source(int(k)) == whole->source(int(k)));
  // One weight byte changed: the checksum says so, weights unread or not.
  {
    std::FILE *f = std::fopen(path.c_str(), "r+b");
    REQUIRE(f);
    std::fseek(f, long(light->weightsInFile.offset + 1000), SEEK_SET);
    std::fputc(0x5a, f);
    std::fclose(f);
  }
  CHECK_FALSE(readArtifactWithoutWeights(path, error));
  CHECK(error.find("checksum mismatch") != std::string::npos);
  // Unverified (to plan from the manifest only), the weights go unread.
  auto planned =
      readArtifactWithoutWeights(path, error, kLeaveWeightsFrom, false);
  REQUIRE(planned);
  CHECK(planned->manifest.tensors.size() == whole->manifest.tensors.size());
  CHECK(planned->weightsInFile.size == c.weights.size());
  cuts_model *m = nullptr;
  cuts_load_options o{};
  o.weight_budget = uint64_t(1) << 30;
  CHECK(cuts_model_load(path.c_str(), &o, &m) == CUTS_ERROR_BAD_ARTIFACT);
  CHECK(std::string(cuts_last_error()).find("checksum") != std::string::npos);
  // Small weights are read with the rest, unless asked otherwise: then
  // the sections after them (two archs' CUBINs, the sources) move up.
  REQUIRE(writeArtifact(path, sampleContents(), nullptr, error));
  auto small = readArtifactWithoutWeights(path, error);
  REQUIRE(small);
  CHECK(small->weightsInFile.size == 0);
  CHECK(small->section("weights", nullptr) != nullptr);
  auto cut = readArtifactWithoutWeights(path, error, 1);
  INFO(error);
  REQUIRE(cut);
  CHECK(cut->weightsInFile.offset == small->sections.at("weights").offset);
  CHECK(cut->weightsInFile.size == 512);
  CHECK(cut->bytes.size() < small->bytes.size());
  // A pipeline stage's weights packed from the file, as from memory.
  {
    Manifest a = cut->manifest, b = small->manifest;
    std::vector<uint8_t> fromFile, fromMemory;
    REQUIRE(packWeightsFromFile(a, path, cut->weightsInFile.offset, fromFile,
                                error));
    packWeights(b, small->section("weights", nullptr), fromMemory);
    CHECK(fromFile == fromMemory);
    CHECK(fromFile.size() > 256);
  }
  for (size_t k = 0; k < small->manifest.kernels.size(); ++k) {
    CHECK(cut->source(int(k)) == small->source(int(k)));
    for (const auto &[arch, blob] : small->manifest.kernels[k].cubins) {
      const Blob &b = cut->manifest.kernels[k].cubins.at(arch);
      uint64_t n = 0, m = 0;
      const uint8_t *x = cut->section("cubin." + arch, &n);
      const uint8_t *y = small->section("cubin." + arch, &m);
      REQUIRE((x && y && n == m));
      CHECK(std::memcmp(x + b.offset, y + blob.offset, blob.size) == 0);
    }
  }
  // A weights section said to start past the file's end is refused, as
  // the whole file's parse refuses it (a fuzzer's find).
  std::vector<uint8_t> bytes = serializeArtifact(sampleContents());
  const uint32_t count = uint32_t(bytes[12]) | uint32_t(bytes[13]) << 8;
  for (uint32_t i = 0; i < count; ++i) {
    uint8_t *e = bytes.data() + 64 + 64 * i;
    if (std::string(reinterpret_cast<char *>(e)) == "weights")
      std::memset(e + 33, 0xf0, 7); // the offset, 256-byte aligned
  }
  const uint64_t sum = xxh64(bytes.data() + 64, bytes.size() - 64);
  std::memcpy(bytes.data() + 24, &sum, 8);
  REQUIRE(writeFile(path, bytes, error));
  CHECK_FALSE(readArtifactWithoutWeights(path, error, 1));
  INFO(error);
  CHECK(error.find("outside the file") != std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("C API: the device count, or why there is none", "[runtime]") {
  CHECK(cuts_device_count(nullptr) == CUTS_ERROR_INVALID_ARGUMENT);
  int count = -1;
  const cuts_status st = cuts_device_count(&count);
  CHECK((st == CUTS_OK || st == CUTS_ERROR_NO_DEVICE));
  CHECK(count >= (st == CUTS_OK ? 1 : 0));
  if (st != CUTS_OK)
    CHECK(count == 0);
}
