//===- Tuner.h - candidate kernels timed on the GPU; the cache --*- C++ -*-===//
//
// The code selector of thesis §3.1: the candidates the performance model
// kept are compiled (NVRTC, in parallel on the CPU cores) and timed on the
// GPU; the measured times become Evaluate's cost in the partition search and
// pick each group's kernel. Results live in a tuning cache keyed by the
// kernel's signature (its code, the arch and the NVRTC version), so a
// compile on a machine without a GPU makes the same choices from the cache.
//
// No MLIR here: `cuts tune` (in cuts-run) and a static `cuts compile --tune`
// on a GPU host both use it.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_COMPILER_TUNE_TUNER_H
#define CUTS_COMPILER_TUNE_TUNER_H

#include "compiler/tune/Progress.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cuts::tune {

/// One kernel to time: its CUDA source and launch, and the sizes of its
/// arguments (float buffers, in order; outputs are written).
struct Candidate {
  std::string key; // signature(): what the cache knows it by
  std::string name;
  std::string source;
  int64_t grid = 1, block = 1, sharedBytes = 0;
  std::vector<uint64_t> argBytes;
  std::vector<bool> argOutput;
  /// Args zeroed before the kernel is timed, as a session's state is (a
  /// split-K kernel's counters, which it leaves zero); empty: none.
  std::vector<bool> argZeroed;
  /// A vendor-library alternative instead of a generated kernel (no
  /// source): "cudnn.conv" with an encoded rt::ConvSpec.
  std::string library;
  std::vector<int64_t> libraryParams;
  /// The group (fused subset) it is a candidate of, and its level there:
  /// 0 for the best-bound set and the library calls, then one per
  /// parameter set and loop variant down the ranking. The tuner times level
  /// by level, so every group has a time before any has its eighth, and
  /// cuts short a candidate far slower than its group's fastest.
  int group = -1;
  int level = 0;
};

/// The cache key of a library call: its parameters on one arch and how it
/// was timed (not the library's version, which a machine without the
/// library cannot know).
std::string librarySignature(const std::string &library,
                             const std::vector<int64_t> &params,
                             const std::string &arch);

/// "sm_90/13.0/<FNV-1a 64 of the code, hex>": the code (with the function
/// named neutrally and comments stripped) on one arch and toolkit.
std::string signature(const std::string &code, const std::string &arch,
                      const std::string &toolkit);

/// Measured times by signature. A candidate that failed to compile or run
/// is recorded too (no time), so it is not measured again.
class Cache {
public:
  struct Entry {
    std::optional<double> us; // median microseconds; none: it failed
    std::string note;         // why it failed, or how it was measured
  };
  /// Loads `path` (a missing file is an empty cache).
  bool load(const std::string &path, std::string &error);
  bool save(const std::string &path, std::string &error) const;
  const Entry *find(const std::string &key) const;
  void put(const std::string &key, Entry e) { entries[key] = std::move(e); }
  size_t size() const { return entries.size(); }

  /// The CUBINs of the kernels a tuned compile chose, by signature of their
  /// whole source: NVRTC does not always produce the same bytes for the
  /// same source (seen with CUDA 13.0: a few kernels in a hundred get
  /// differently scheduled PTX from run to run), so a compile from the cache
  /// takes the very binary that was measured and shipped before, and the
  /// artifact comes out byte-identical.
  const std::vector<char> *binary(const std::string &key) const;
  void putBinary(const std::string &key, std::vector<char> cubin) {
    binaries[key] = std::move(cubin);
  }

private:
  std::map<std::string, Entry> entries;
  std::map<std::string, std::vector<char>> binaries;
};

/// The candidates as JSON (what `cuts compile --candidates` writes and
/// `cuts tune` reads), and back.
std::string candidatesToJson(const std::vector<Candidate> &c,
                             const std::string &arch);
bool candidatesFromJson(const std::string &text, std::vector<Candidate> &c,
                        std::string &arch, std::string &error);

/// What measure() times, in its order: each signature once, only what the
/// cache lacks, by level, else in the given order.
std::vector<const Candidate *> measureOrder(const std::vector<Candidate> &all,
                                            const Cache &cache);

/// Where measure()'s wall time went, so a slow tuning run says why.
struct MeasureStats {
  double waitNvrtc = 0; // the GPU idle, waiting for the next compile
  double setup = 0;     // library plans, module loads, buffers
  double timing = 0;    // warm-up and timed launches
  double finish = 0;    // compiles in flight when measuring stopped
  double slowest = 0;   // the longest one candidate took to set up and time
  std::string slowestName;
  void add(const MeasureStats &o);
};

struct MeasureOptions {
  int jobs = 0; // NVRTC threads; 0: one per core
  /// An executable that serves `--nvrtc-worker` (NvrtcWorker.h): each NVRTC
  /// thread compiles in a child process of it. "": in this process.
  std::string nvrtcWorker;
  int warmup = 2;       // launches before timing
  int maxIters = 20;    // timed launches (fewer for slow kernels)
  double targetMs = 20; // timed milliseconds to aim for per candidate
  ProgressMode progress = ProgressMode::Off; // on stderr (Progress.h)
  /// A candidate whose first timed launch is this many times its group's
  /// fastest median so far is recorded with that one launch: it cannot
  /// win, and at batch 64 a poor conv tiling runs for milliseconds, times
  /// the 15 launches of a full measurement. 0: always measure in full.
  /// Only launches over slowMinUs: below, one launch's time is mostly
  /// launch latency, which the graph-replayed medians do not include.
  double slowFactor = 3;
  double slowMinUs = 100;
  /// Stop compiling and timing new candidates after this many seconds
  /// (those left are not recorded, so a later run measures them). 0: none.
  double maxSeconds = 0;
  MeasureStats *stats = nullptr; // accumulated into, when set
};

/// Compiles and times every candidate not in `cache` on GPU 0, adding each
/// result, by level (Candidate::level) and then in the given order. Fails (with
/// `error`) only when there is no GPU or a kernel corrupts the context; a
/// kernel that does not compile or launch is recorded as failed.
bool measure(const std::vector<Candidate> &candidates, const std::string &arch,
             Cache &cache, const MeasureOptions &opts, std::string &error);

/// A cuSync pair (compiler/driver/PlanSync.cpp) to time each way it can
/// run: in stream order, with the consumer a programmatic dependent (PDL,
/// sm_90 and later), and synchronised under each policy. The synchronised
/// kernels take the pair's state after their own arguments: the post
/// variant (semaphores, started), the wait variant (semaphores, epoch); the
/// hold kernel takes (started, epoch) and the epoch kernel (epoch).
struct PairCandidate {
  /// The plain pair's signature; its times are cached under pairKey().
  std::string key;
  Candidate producer, consumer;
  int producerWrites = -1;        // the producer's argument the consumer reads
  std::vector<int> consumerReads; // and the consumer's arguments it is
  struct Synchronised {
    std::string policy;
    Candidate post, wait;
    int64_t semaphores = 0; // words
    bool ordered = false;   // the post takes T's slot counter, cuts_next
  };
  std::vector<Synchronised> policies;
  std::string hold, epoch; // the sources of cuts_sync_wait, cuts_sync_epoch
};

/// Where the cache keeps a pair's time run one way: "stream", "pdl", a
/// policy's name or overPdlWay(its name).
inline std::string pairKey(const std::string &key, const std::string &way) {
  return key + "/pair/" + way;
}

/// The way a policy runs over PDL (one stream, rt::Step::overPdl).
inline std::string overPdlWay(const std::string &policy) {
  return policy + "/pdl";
}

/// Times every pair whose times the cache lacks on GPU 0, each way
/// interleaved with the others, and checks that each synchronised way's
/// outputs equal stream order's bit for bit (a way that differs is recorded
/// as failed). Fails (with `error`) when there is no GPU, a launch fails, or
/// a synchronised run does not finish (a deadlock).
bool measurePairs(const std::vector<PairCandidate> &pairs,
                  const std::string &arch, Cache &cache,
                  const MeasureOptions &opts, std::string &error);

} // namespace cuts::tune

#endif // CUTS_COMPILER_TUNE_TUNER_H
