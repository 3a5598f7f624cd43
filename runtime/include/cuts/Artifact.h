//===- Artifact.h - the model.cuts file: what it holds and its format -*- C++
//-*-===//
//
// The runtime owns the artifact format; the compiler driver writes it through
// serializeArtifact and writeFile, and servers read it through the C API
// (cuts.h), which parses it with parseArtifact. No MLIR here: a server links
// this and the CUDA driver only.
//
// Layout of model.cuts (all integers little-endian):
//   header   64 bytes: magic "CUTSMDL\0", u32 format version, u32 section
//            count, u64 file size, u64 XXH64 (seed 0) checksum of every byte
//            after the header, 32 bytes zero
//   table    one 64-byte entry per section: name (32 bytes, NUL-padded),
//            u64 offset, u64 size, 16 bytes zero
//   sections each at a 256-byte aligned offset:
//            "manifest"      JSON: tensors, kernels, steps (below)
//            "manifest.<B>"  another batch profile's manifest, one per
//                            profile (cuts compile --batch), in increasing
//                            batch B; it shares every other section
//            "manifest.rank<R>" a tensor-parallel model's plan of rank R
//                            >= 1 (cuts compile --tensor-parallel); shares
//                            the sections as profiles do
//            "weights"       every constant, each at a 256-byte aligned offset
//            "cubin.sm_XY"   the kernels' CUBINs for one architecture, back to
//                            back (offsets in the manifest)
//            "source"        the kernels' CUDA sources (for --emulate and for
//                            reading), back to back
//            "codec.sm_XY"   (optional) the weight codecs' CUBIN for one arch
//                            of the manifest's (cuts compile --weight-codecs):
//                            what a device list's weight distribution
//                            compresses with (codegen/emit/Compress.h)
//            "collective.sm_XY" a tensor-parallel model's all-reduce sum
//                            kernels' CUBIN for one arch of the manifest's
//                            (codegen/emit/Collective.h)
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_ARTIFACT_H
#define CUTS_RUNTIME_ARTIFACT_H

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cuts::rt {

constexpr uint32_t kArtifactVersion = 2; // 2: XXH64 checksum

/// State: a session's own device memory, zeroed when the session is
/// created and kept across runs (cuSync's semaphores and run epoch).
enum class TensorKind { Input, Output, Weight, Intermediate, View, State };

/// Bytes per element of a manifest dtype: "float32" "float16" "bfloat16"
/// "float64" "int8" "uint8" "int16" "int32" "int64" "bool" (one byte, 0 or
/// 1); 0 for any other string.
uint64_t dtypeBytes(const std::string &dtype);

struct Tensor {
  std::string name; // the ONNX value name
  std::vector<int64_t> shape;
  std::string dtype = "float32"; // one dtypeBytes knows
  TensorKind kind = TensorKind::Intermediate;
  int index = -1;            // Input/Output: position among the model's I/O
  uint64_t weightOffset = 0; // Weight: offset in the weights section
  int viewOf = -1;           // View: the tensor whose memory this re-shapes
  /// Input/Output of a plan with batch profiles: the axis that is the batch
  /// (0), or -1 where the tensor has none.
  int batchAxis = -1;
  uint64_t bytes() const; // elements x element size
};

/// A byte range inside a section.
struct Blob {
  uint64_t offset = 0, size = 0;
};

/// A kernel of the plan: a generated one (library empty: its CUDA source
/// and a CUBIN per arch), or a call into a vendor library (library names
/// it; no source, no CUBINs; grid, block and sharedBytes unused).
struct KernelLaunch {
  std::string name;    // the extern "C" __global__ function
  std::string summary; // ops and parameters, one line
  int64_t grid = 1, block = 1, sharedBytes = 0; // 1-D grid and block
  std::vector<int> args;                        // tensor ids, in order
  std::vector<int> outputs;                     // which args it writes
  double pulTimeUs = 0; // the performance model's lower bound
  /// The least work the kernel's ops need: FLOPs (an FMA is 2) and the bytes
  /// moved with each input read and each output written once (0: unknown).
  /// `cuts bench --kernels` divides them by the measured time.
  double flops = 0;
  uint64_t bytes = 0;
  Blob source;                        // in the "source" section
  std::map<std::string, Blob> cubins; // arch ("sm_90") -> in "cubin.<arch>"
  /// "" for a generated kernel; "cudnn.conv" for cuDNN's fused convolution,
  /// whose libraryParams are an encoded ConvSpec (cuts/rt/Library.h) and
  /// whose args are x, w, [bias], [z], y.
  std::string library;
  std::vector<int64_t> libraryParams;
  /// Device scratch the library call needed when the tuner timed it (the
  /// runtime asks the library again and takes the larger).
  uint64_t workspaceBytes = 0;

  bool isLibrary() const { return !library.empty(); }
};

/// One step of the plan: run a kernel, or copy a tensor into another (a
/// model output that is an input, a weight, or another output's view).
/// A step runs on the session's stream (0) or its side stream (1), after
/// the steps before it on its stream and, where `after` >= 0, after that
/// earlier step of the other stream: cuSync's pairs run their consumer on
/// the side stream, concurrently with the producer. A `pdl` step's kernel
/// is launched as a programmatic dependent of the kernel before it (sm_90:
/// its launch overlaps that one's last blocks, and it waits in
/// griddepcontrol.wait before touching memory); elsewhere as usual.
struct Step {
  int kernel = -1;        // index into kernels, or -1 for a copy
  int from = -1, to = -1; // the copy's tensors
  int stream = 0;
  int after = -1;
  bool pdl = false;
  /// A cuSync consumer that runs over PDL where the GPU has it: on stream
  /// 0 right after its producer (the step two before), launched as its
  /// programmatic dependent, which the producer's blocks let launch once
  /// each has started; its wait kernel (the step before) is skipped.
  /// Elsewhere, or where a run launches no programmatic dependents, it runs
  /// on the side stream as written.
  bool overPdl = false;
  /// A tensor-parallel plan's collective instead of a copy: "all-reduce",
  /// the ranks' sum of `from` in place (`to` is a view of it).
  std::string collective = {};
  /// Where the compiler put it: "nccl" below the target's measured
  /// crossover (perfmodel/arch), else "" for the copy engines; a device
  /// list that repeats a device, or has no NCCL, uses the copy engines.
  std::string engine = {};
  /// A library step's generated alternative (an index into kernels, not
  /// itself a step's), run where the plan is not replayed as a CUDA graph:
  /// there a cuDNN call's host work (5-100 us) outlasts its kernel. -1:
  /// none. Its outputs include the library call's.
  int hostKernel = -1;

  /// The kernel the step launches, in a run replayed as a CUDA graph
  /// (`graph`) or not; -1 for a copy.
  int kernelRun(bool graph) const {
    return hostKernel >= 0 && !graph ? hostKernel : kernel;
  }
};

struct Manifest {
  std::string model;    // graph name
  std::string producer; // "cuts 0.1.0"
  std::vector<std::string> archs;
  /// The GPU descriptor the plan was tuned for ("H200") and its ceilings:
  /// PERF_peak in FLOP/s of the units `precision` runs on (FP32 SIMT; the
  /// tensor cores' fp16 peak for fp16 and bf16) and BW_global in bytes/s
  /// ("" and 0: none).
  std::string target;
  double peakFlops = 0, bandwidth = 0;
  /// How the floating-point tensors between kernels are stored ("fp32",
  /// "fp16", "bf16": cuts compile --precision); kernels compute in fp32.
  std::string precision = "fp32";
  /// The batch this plan serves when the model has batch profiles (cuts
  /// compile --batch; its batched inputs and outputs have that size on their
  /// batchAxis); 0 when it has none.
  int64_t batch = 0;
  /// Where the model combines rows of its batch (cuts compile --batch found
  /// the op: "op (loc) why"), so that a padded batch or a device list's
  /// split would change the results; "" where rows are independent.
  std::string mixesRows;
  /// A tensor-parallel plan: its rank of `ranks` (cuts compile
  /// --tensor-parallel); ranks 0 where the model is not split.
  int64_t ranks = 0, rank = 0;
  std::vector<Tensor> tensors;
  std::vector<int> inputs, outputs; // tensor ids in the model's order
  std::vector<KernelLaunch> kernels;
  std::vector<Step> steps;
};

/// A parsed artifact. The sections point into `bytes`.
struct Artifact {
  Manifest manifest; // the only plan, or the smallest batch profile's
  /// The other batch profiles, by increasing batch: the same inputs and
  /// outputs (but for the batch), weights, archs and precision.
  std::vector<Manifest> profiles;
  /// A tensor-parallel model's plans of ranks 1.. (the manifest is rank
  /// 0's): the same inputs and outputs, their own weights and kernels.
  std::vector<Manifest> rankPlans;
  std::vector<uint8_t> bytes;
  std::map<std::string, Blob> sections; // name -> range of `bytes`
  /// Where the weights section lies in the artifact's file when `bytes`
  /// leaves it out (readArtifactWithoutWeights; its "weights" is then
  /// empty); size 0 where `bytes` holds it.
  Blob weightsInFile;

  const uint8_t *section(const std::string &name, uint64_t *size) const;
  /// The kernel's CUDA source (empty if the artifact has none).
  std::string source(const KernelLaunch &k) const;
  std::string source(int kernel) const; // the manifest's kernel
  /// Every plan: the manifest's, then the profiles'.
  std::vector<const Manifest *> plans() const;
};

/// Bytes of the weights section held elsewhere (a compiler's constants,
/// gigabytes not copied once more): `size` bytes from `data` at `offset`
/// in the section. `data` must stay valid until the contents are written.
struct WeightSpan {
  uint64_t offset = 0;
  const uint8_t *data = nullptr;
  uint64_t size = 0;
};

/// What the driver hands writeArtifact: the manifest (blobs filled in by
/// the writer), the weights section, and per kernel its source and its
/// CUBIN per arch.
struct ArtifactContents {
  Manifest manifest;
  /// The weights section: `weights`, then the spans, in order of offset
  /// and from weights.size() on (the writers fail otherwise); zeros
  /// between.
  std::vector<uint8_t> weights;
  std::vector<WeightSpan> weightSpans;
  uint64_t weightBytes() const {
    uint64_t end = weights.size();
    for (const WeightSpan &w : weightSpans)
      end = std::max(end, w.offset + w.size);
    return end;
  }
  std::vector<std::string> sources;                             // per kernel
  std::vector<std::map<std::string, std::vector<char>>> cubins; // per kernel
  /// The other batch profiles (Artifact::profiles), each with its kernels'
  /// sources and CUBINs; identical ones are stored once.
  struct Profile {
    Manifest manifest;
    std::vector<std::string> sources;
    std::vector<std::map<std::string, std::vector<char>>> cubins;
  };
  std::vector<Profile> profiles;
  /// A tensor-parallel model's plans of ranks 1.. ("manifest.rank<r>").
  std::vector<Profile> rankPlans;
  /// Per arch, the weight codecs' CUBIN ("codec.<arch>"); empty: none.
  std::map<std::string, std::vector<char>> codecs;
  /// Per arch, the all-reduce's sum kernels' CUBIN ("collective.<arch>");
  /// a tensor-parallel model's.
  std::map<std::string, std::vector<char>> collectives;
};

/// Serialises `c` (deterministically: the same contents give the same bytes);
/// empty where its weight spans are out of order or overlap.
std::vector<uint8_t> serializeArtifact(const ArtifactContents &c);

/// Writes serializeArtifact(c)'s bytes to `path` as they are produced, with
/// no copy of the whole file in memory (a model's weights can be gigabytes),
/// through a temporary file renamed at the end; `size` (if given) gets the
/// file's size.
bool writeArtifact(const std::string &path, const ArtifactContents &c,
                   uint64_t *size, std::string &error);

/// Parses and validates: magic, version, sizes, checksum, section bounds,
/// manifest schema, tensor ids, weight ranges, kernel blobs. On failure
/// nullopt and `error` says what is wrong.
/// `weightsInFile`: `bytes` is a file's image without its weights section
/// (empty in the table), which lies there in the file.
std::optional<Artifact> parseArtifact(std::vector<uint8_t> bytes,
                                      std::string &error,
                                      const Blob &weightsInFile = {});

/// Reads a file and parses it; `error` names the file.
std::optional<Artifact> readArtifact(const std::string &path,
                                     std::string &error);
/// The same, but a weights section of `leaveFrom` bytes or more stays in
/// the file: its bytes are read once, in blocks, for the checksum and not
/// kept (streamed weights; Artifact::weightsInFile says where they are).
/// Memory holds the kernels and manifests only. verify = false reads none
/// of those weights and checks no checksum: for a caller that only plans
/// from the manifest and then loads through the runtime, which verifies.
constexpr uint64_t kLeaveWeightsFrom = uint64_t(64) << 20;
std::optional<Artifact>
readArtifactWithoutWeights(const std::string &path, std::string &error,
                           uint64_t leaveFrom = kLeaveWeightsFrom,
                           bool verify = true);

bool writeFile(const std::string &path, const std::vector<uint8_t> &bytes,
               std::string &error);
/// Writes `path` through `write` as writeFile does (a temporary file
/// renamed when `write` succeeds).
bool writeFileWith(const std::string &path, std::string &error,
                   const std::function<bool(std::FILE *)> &write);

/// Buffers reused by liveness: one arena offset per Intermediate tensor
/// (256-byte aligned), so that two tensors whose live ranges over the steps
/// overlap never overlap in memory. State tensors lie apart, back to back
/// (256-byte aligned), in a session's state buffer.
struct MemoryPlan {
  std::vector<int64_t> offset;      // per tensor; -1 if not in the arena
  uint64_t arenaBytes = 0;          // peak
  uint64_t naiveBytes = 0;          // without reuse (for the report)
  std::vector<int64_t> stateOffset; // per tensor; -1 if not a state root
  uint64_t stateBytes = 0;
};
MemoryPlan planMemory(const Manifest &m);

/// The tensor whose memory `t` is (following views).
int rootTensor(const Manifest &m, int t);

} // namespace cuts::rt

#endif // CUTS_RUNTIME_ARTIFACT_H
