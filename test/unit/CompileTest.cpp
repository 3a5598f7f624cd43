// The compile driver's artifact for a graph with integer and bool tensors
// (BERT's input_ids and attention_mask): each tensor's dtype from its
// element type, integer constants in the weights at their real size, and
// model.h / libmodel.so with typed parameters. No CUBINs (no archs), so no
// NVRTC is needed, except where a test batches kernels for NVRTC.
#include "compiler/driver/Compile.h"
#include "GraphTestUtil.h"
#include "codegen/emit/Nvrtc.h"
#include "compiler/driver/ModelLibrary.h"
#include "cuts/Artifact.h"
#include "perfmodel/Arch.h"
#include "perfmodel/Describe.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

using namespace cuts;

namespace {

const char *kTyped = R"mlir(
func.func @main(%ids: tensor<2x4xi64> {cuts.name = "input_ids"}, %m: tensor<2x4xi64> {cuts.name = "attention_mask"}) -> (tensor<2x4x6xf32> {cuts.name = "y"}, tensor<2x4xi1> {cuts.name = "keep"}) {
  %t = cuts.constant {value = dense<1.5> : tensor<7x6xf32>} : tensor<7x6xf32>
  %c = cuts.constant {value = dense<[0, 1, -2, 3]> : tensor<4xi64>} : tensor<4xi64>
  %0 = cuts.add %ids, %c : (tensor<2x4xi64>, tensor<4xi64>) -> tensor<2x4xi64>
  %1 = cuts.gather %t, %0 {axis = 0 : i64} : (tensor<7x6xf32>, tensor<2x4xi64>) -> tensor<2x4x6xf32>
  %2 = cuts.cast %m {to = i1} : (tensor<2x4xi64>) -> tensor<2x4xi1>
  return %1, %2 : tensor<2x4x6xf32>, tensor<2x4xi1>
}
)mlir";

const rt::Tensor *find(const rt::Manifest &m, const std::string &dtype,
                       rt::TensorKind kind) {
  for (const rt::Tensor &t : m.tensors)
    if (t.dtype == dtype && t.kind == kind)
      return &t;
  return nullptr;
}

} // namespace

TEST_CASE("compile: int64 and bool tensors keep their dtypes", "[driver]") {
  test::Graph g(kTyped);
  driver::CompileOptions opts;
  opts.arch = *findArch("h100");
  opts.jobs = 1;
  std::string error;
  auto res = driver::compileModule(*g.module, opts, error);
  INFO(error);
  REQUIRE(res);
  const rt::Manifest &m = res->contents.manifest;
  REQUIRE(m.inputs.size() == 2);
  for (int t : m.inputs) {
    CHECK(m.tensors[t].dtype == "int64");
    CHECK(m.tensors[t].bytes() == 2 * 4 * 8);
  }
  REQUIRE(m.outputs.size() == 2);
  CHECK(m.tensors[m.outputs[0]].dtype == "float32");
  CHECK(m.tensors[m.outputs[1]].dtype == "bool");
  CHECK(m.tensors[m.outputs[1]].bytes() == 8);

  // The int64 constant: 8 bytes an element, little-endian two's complement.
  const rt::Tensor *c = find(m, "int64", rt::TensorKind::Weight);
  REQUIRE(c);
  CHECK(c->shape == std::vector<int64_t>{4});
  // Read back from the artifact (the contents' weights are spans).
  std::string perr;
  auto art = rt::parseArtifact(rt::serializeArtifact(res->contents), perr);
  INFO(perr);
  REQUIRE(art);
  uint64_t wSize = 0;
  const uint8_t *w = art->section("weights", &wSize);
  REQUIRE(c->weightOffset + 32 <= wSize);
  int64_t v[4];
  std::memcpy(v, w + c->weightOffset, 32);
  CHECK((v[0] == 0 && v[1] == 1 && v[2] == -2 && v[3] == 3));
  const rt::Tensor *t = find(m, "float32", rt::TensorKind::Weight);
  REQUIRE(t);
  float f;
  std::memcpy(&f, w + t->weightOffset, 4);
  CHECK(f == 1.5f);

  std::string h = driver::modelHeader(m, "bert");
  CHECK(h.find("cuts_status bert_run(cuts_session *session, const int64_t "
               "*input_ids, const int64_t *attention_mask, float *y, bool "
               "*keep);") != std::string::npos);
  CHECK(h.find("input_ids: int64 2x4 (input \"input_ids\")") !=
        std::string::npos);
  CHECK(h.find("keep: bool 2x4 (output \"keep\")") != std::string::npos);
  CHECK(h.find("#include <stdbool.h>") != std::string::npos);
  std::string lib = driver::modelLibrarySource(m, "bert", "/x/model.cuts");
  CHECK(lib.find("{\"input_ids\", CUTS_INT64, 2, s0, (void *)input_ids}") !=
        std::string::npos);
  CHECK(lib.find("{\"keep\", CUTS_BOOL, 2, s3, (void *)keep}") !=
        std::string::npos);
  CHECK(lib.find("{\"y\", CUTS_FLOAT32, 3, s2, (void *)y}") !=
        std::string::npos);
  CHECK(lib.find(".incbin \\\"/x/model.cuts\\\"") != std::string::npos);
  // An artifact too large to embed is read from beside the library.
  std::string beside =
      driver::modelLibrarySource(m, "bert", "/x/model.cuts", false);
  CHECK(beside.find(".incbin") == std::string::npos);
  CHECK(beside.find("dladdr(reinterpret_cast<void *>(&bert_load)") !=
        std::string::npos);
  CHECK(beside.find("cuts_model_load((dir + \"/model.cuts\").c_str()") !=
        std::string::npos);
  CHECK(beside.find("{\"y\", CUTS_FLOAT32, 3, s2, (void *)y}") !=
        std::string::npos);

  // With batch profiles the run takes the batch; batched shapes follow it.
  rt::Manifest batched = m;
  batched.batch = 2;
  batched.tensors[size_t(batched.inputs[0])].batchAxis = 0;
  batched.tensors[size_t(batched.outputs[0])].batchAxis = 0;
  h = driver::modelHeader(batched, "bert");
  CHECK(h.find("cuts_status bert_run(cuts_session *session, int64_t batch, "
               "const int64_t *input_ids,") != std::string::npos);
  CHECK(h.find("input_ids: int64 batchx4") != std::string::npos);
  CHECK(h.find("attention_mask: int64 2x4") != std::string::npos);
  lib = driver::modelLibrarySource(batched, "bert", "/x/model.cuts");
  CHECK(lib.find("  int64_t s0[] = {2, 4};\n  s0[0] = batch;\n") !=
        std::string::npos);
  CHECK(lib.find("  static const int64_t s1[] = {2, 4};\n") !=
        std::string::npos);
}

TEST_CASE("compile: an element type an artifact cannot hold is named",
          "[driver]") {
  test::Graph g(R"mlir(
func.func @main(%x: tensor<4xui32> {cuts.name = "x"}) -> (tensor<4xui32>) {
  return %x : tensor<4xui32>
}
)mlir");
  driver::CompileOptions opts;
  opts.arch = *findArch("h100");
  std::string error;
  CHECK_FALSE(driver::compileModule(*g.module, opts, error));
  CHECK(error.rfind("input 0 (\"x\") has element type ui32", 0) == 0);
}

TEST_CASE("compile: an op that no tile fits is named, not made a "
          "pathological kernel",
          "[driver]") {
  // A 12544-element row (EfficientNet's squeeze) outside the clean-up,
  // whose cuts-split-reductions would have split it.
  test::Graph g(R"mlir(
func.func @main(%x: tensor<1x32x112x112xf32> {cuts.name = "x"}) -> (tensor<1x32x1x1xf32> {cuts.name = "y"}) {
  %0 = cuts.global_average_pool %x : (tensor<1x32x112x112xf32>) -> tensor<1x32x1x1xf32>
  return %0 : tensor<1x32x1x1xf32>
}
)mlir");
  driver::CompileOptions opts;
  opts.arch = *findArch("h100");
  std::string error;
  CHECK_FALSE(driver::compileModule(*g.module, opts, error));
  INFO(error);
  CHECK(error.find("global_average_pool") != std::string::npos);
  CHECK(error.find("a row of 12544 over 32 lanes, 1 a thread, is more") !=
        std::string::npos);
}

TEST_CASE("compile: each kernel carries its least work, the manifest its "
          "ceilings",
          "[driver]") {
  // A conv + bias + relu (one kernel: register-level fusion) and an
  // embedding gather from a 100-row table.
  test::Graph g(R"mlir(
func.func @main(%x: tensor<1x4x6x6xf32> {cuts.name = "x"}, %ids: tensor<2x4xi64> {cuts.name = "ids"}) -> (tensor<1x8x6x6xf32> {cuts.name = "y"}, tensor<2x4x6xf32> {cuts.name = "e"}) {
  %w = cuts.constant {value = dense<0.25> : tensor<8x4x3x3xf32>} : tensor<8x4x3x3xf32>
  %b = cuts.constant {value = dense<0.5> : tensor<8x1x1xf32>} : tensor<8x1x1xf32>
  %t = cuts.constant {value = dense<1.5> : tensor<100x6xf32>} : tensor<100x6xf32>
  %0 = cuts.conv %x, %w {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x4x6x6xf32>, tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32>
  %1 = cuts.add %0, %b : (tensor<1x8x6x6xf32>, tensor<8x1x1xf32>) -> tensor<1x8x6x6xf32>
  %2 = cuts.relu %1 : (tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  %3 = cuts.gather %t, %ids {axis = 0 : i64} : (tensor<100x6xf32>, tensor<2x4xi64>) -> tensor<2x4x6xf32>
  return %2, %3 : tensor<1x8x6x6xf32>, tensor<2x4x6xf32>
}
)mlir");
  // The bias add's and the relu's COMP, once per output.
  auto ops = g.pick({1, 2});
  double epilogue =
      describeOp(ops[0])->totalComp() + describeOp(ops[1])->totalComp();
  CHECK(epilogue == 2 * 8 * 36);
  driver::CompileOptions opts;
  opts.arch = *findArch("h100");
  opts.jobs = 1;
  std::string error;
  auto res = driver::compileModule(*g.module, opts, error);
  INFO(error);
  REQUIRE(res);
  const rt::Manifest &m = res->contents.manifest;
  CHECK(m.target == opts.arch.name);
  CHECK(m.peakFlops == opts.arch.perfPeakFp32);
  CHECK(m.bandwidth == opts.arch.bwGlobal);
  REQUIRE(m.kernels.size() == 2);
  const rt::KernelLaunch *conv = nullptr, *gather = nullptr;
  for (const rt::KernelLaunch &k : m.kernels)
    (k.summary.find("conv") != std::string::npos ? conv : gather) = &k;
  REQUIRE(conv);
  REQUIRE(gather);
  INFO(conv->summary);
  // 2 FLOPs (an FMA) per input channel and tap of each output, plus the
  // epilogue's.
  CHECK(conv->flops == 2.0 * 4 * 8 * 6 * 6 * 9 + epilogue);
  // x, the weights, the bias and y, each once.
  CHECK(conv->bytes == 4 * (4 * 36 + 8 * 4 * 9 + 8 + 8 * 36));
  // The ids, the 8 rows read of the table (not its 100), the result.
  INFO(gather->summary);
  CHECK(gather->bytes == 2 * 4 * 8 + 2 * 4 * 6 * 4 + 2 * 4 * 6 * 4);
  // They survive the artifact.
  std::string perr;
  auto a = rt::parseArtifact(rt::serializeArtifact(res->contents), perr);
  INFO(perr);
  REQUIRE(a);
  CHECK(a->manifest.kernels[0].flops == m.kernels[0].flops);
  CHECK(a->manifest.kernels[1].bytes == m.kernels[1].bytes);
  CHECK(a->manifest.target == m.target);
}

TEST_CASE("compile: small kernels share one NVRTC program, each reported",
          "[driver]") {
  // Three elementwise kernels (a relu, a sigmoid, a tanh on separate
  // outputs): one batch, one CUBIN holding all three, each with its own
  // ptxas line. With a tuning cache each kernel compiles alone.
  test::Graph g(R"mlir(
func.func @main(%x: tensor<4x64xf32> {cuts.name = "x"}) -> (tensor<4x64xf32> {cuts.name = "a"}, tensor<4x64xf32> {cuts.name = "b"}, tensor<4x64xf32> {cuts.name = "c"}) {
  %0 = cuts.relu %x : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %1 = cuts.sigmoid %x : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %2 = cuts.tanh %x : (tensor<4x64xf32>) -> tensor<4x64xf32>
  return %0, %1, %2 : tensor<4x64xf32>, tensor<4x64xf32>, tensor<4x64xf32>
}
)mlir");
  REQUIRE(nvrtcAvailable());
  driver::CompileOptions opts;
  opts.arch = *findArch("h100");
  opts.archs = {opts.arch.computeArch};
  opts.jobs = 2;
  std::string error;
  auto res = driver::compileModule(*g.module, opts, error);
  INFO(error);
  REQUIRE(res);
  REQUIRE(res->sources.size() == 3);
  const auto &cubins = res->contents.cubins;
  REQUIRE(cubins.size() == 3);
  const std::string arch = opts.arch.computeArch;
  for (size_t k = 0; k < 3; ++k) {
    CHECK(cubins[k].at(arch) == cubins[0].at(arch));
    CHECK(res->sources[k].ptxas.find(arch + ": ") == 0);
    CHECK(res->sources[k].ptxas.find(" registers") != std::string::npos);
  }
  // The shared CUBIN holds every kernel's entry point.
  const std::vector<char> &bin = cubins[0].at(arch);
  for (const auto &s : res->sources)
    CHECK(std::search(bin.begin(), bin.end(), s.name.begin(), s.name.end()) !=
          bin.end());
  // The artifact stores the shared CUBIN once.
  std::string perr;
  auto art = rt::parseArtifact(rt::serializeArtifact(res->contents), perr);
  INFO(perr);
  REQUIRE(art);
  uint64_t size = 0;
  art->section("cubin." + arch, &size);
  CHECK(size == bin.size());

  opts.tuningCache = "unused.json"; // only decides the batching here
  opts.cost = driver::CostSource::Model;
  auto alone = driver::compileModule(*g.module, opts, error);
  REQUIRE(alone);
  CHECK(alone->contents.cubins[0].at(arch) !=
        alone->contents.cubins[1].at(arch));
}
