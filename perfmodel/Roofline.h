//===- Roofline.h - the DeepCuts performance upper bound (PUL) --*- C++ -*-===//
//
// Thesis §3.2: for an op (Table 3.2 parameters) and a set of implementation
// parameters (Table 3.3), four factors bound the fraction of the GPU's peak
// the kernel can reach:
//   GMRatio = min(1, OI_TB / (R_peak / BW_global))          global memory
//   SMRatio = min(1, (COMP_thread / N_load) / (LAT_shared * COEF_bc))
//   WBRatio = fraction of issued thread-block slots that do work
//   COEF_r  = 1 if threads, shared memory and registers fit, else 0
//   PUL     = GMRatio * SMRatio * WBRatio * COEF_r
// with COMP_block (Table 3.5), N_load (Table 3.6) and NUM_trans (Table 3.7).
// The op (OpDesc) and the tile parameters (TileParams) are Params.h's.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_PERFMODEL_ROOFLINE_H
#define CUTS_PERFMODEL_ROOFLINE_H

#include "perfmodel/Arch.h"
#include "perfmodel/Params.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cuts {

/// The factors of the bound, and what they were computed from.
struct Bound {
  double compBlock = 0, compThread = 0, nLoad = 0, numTrans = 0;
  double oiTB = 0;
  double coefBc = 1;
  /// SMRatio is the latency term x busySchedulers; for complex ops (conv,
  /// matmul) GMRatio x SMRatio is further capped by sharedThroughputRatio
  /// (SMRatio lowered so that the product is the cap).
  double gmRatio = 0, smRatio = 0, wbRatio = 0, coefR = 0;
  /// LATRatio: 1, or less where the chain of C_input iterations an SM runs
  /// one after another (each at least LAT_iter, latencyChainSeconds) is
  /// longer than the work at GMRatio x SMRatio x WBRatio x COEF_r of peak.
  /// Not in the thesis: BERT's batch-1 GEMMs ran C_input 4 sets 3.4x
  /// slower than C_input 64 ones of equal PUL (H200).
  double latRatio = 1;
  /// The chain: chainSteps C_input iterations in a row on a busy SM (its
  /// waves x a block's iterations), each at least LAT_iter x fetchRounds
  /// plus the block's own issue of the iteration (blockIssueCycles). The
  /// resident blocks run theirs side by side, sharing the SM's issue
  /// (closedQueueThroughput), so latencyChainSeconds is the SM's time for
  /// all its blocks' iterations: with one block resident, chainSteps x
  /// (LAT_iter x fetchRounds + blockIssueCycles).
  double chainSteps = 0, fetchRounds = 1;
  double latencyChainSeconds = 0;
  double pul = 0;
  /// The binding one of GMRatio and SMRatio before they are clamped at 1:
  /// how far the set is from being memory- or latency-bound. PUL cannot tell
  /// apart sets where both are clamped (large GEMMs: hundreds of sets at
  /// the same PUL); this ranks them (betterBound).
  double headroom = 0;
  double gmRaw = INFINITY; // OI_TB / ridge (infinite for on-chip input)
  int64_t numBlocks = 0, blocksPerSM = 0, sharedBytes = 0, registers = 0;
  int64_t residentBlocks = 0; // on a busy SM (residentBlocks())
  /// Lower bound of the run time in seconds: total work at PUL x peak.
  double timeLowerBound = 0;
  /// Elements fused ops read beside the op's own operands (FusedExtra).
  double extraElements = 0;
  double totalComp = 0; // the work timeLowerBound divides
  /// PERF_peak of the units the set runs on, FLOP/s: the FP32 SIMT peak, or
  /// the tensor cores' for a tensor-core set. PUL is a fraction of it.
  double peak = 0;
};

/// The ranking of parameter sets: higher PUL first, then more headroom;
/// sets on different units (SIMT, mma.sync, wgmma) by PUL x their peak,
/// then headroom x their peak (equal memory-bound rates: the set with more
/// slack in FLOP/s, not in shares of its own peak).
inline bool betterBound(const Bound &a, const Bound &b) {
  if (a.peak != b.peak) {
    const double ra = a.pul * a.peak, rb = b.pul * b.peak;
    if (std::abs(ra - rb) > 1e-9 * std::max(ra, rb))
      return ra > rb;
    return a.headroom * a.peak > b.headroom * b.peak;
  }
  return a.pul > b.pul || (a.pul == b.pul && a.headroom > b.headroom);
}

// The tables, per thread block or thread, for op d with parameters p.
double compBlock(const OpDesc &d, const TileParams &p);
double compThread(const OpDesc &d, const TileParams &p);
/// A reduction whose rows are split over Wb lanes of a warp (Wt = 1): each
/// lane holds its share in registers, the lanes combine by shuffles, no
/// shared memory (the code generator's warp-cooperative row kernels).
bool rowsOverLanes(const OpDesc &d, const TileParams &p);
double nLoad(const OpDesc &d, const TileParams &p);
/// Whether FORMAT_shared changes nLoad for this kind of op (its 128-bit
/// runs follow which axis is innermost); otherwise only COEF_bc depends on it.
bool nLoadByFormat(OpKind kind);
double numTrans(const OpDesc &d, const TileParams &p, int transElements);
int64_t sharedBytes(const OpDesc &d, const TileParams &p);
/// Registers a thread of the generated kernel needs (an estimate).
int64_t registersPerThread(const OpDesc &d, const TileParams &p);
/// Registers a thread may use in a block of `threads` threads: the
/// kernel's __launch_bounds__ lets ptxas take what one block's threads can
/// hold, up to MAX_regs; a kernel needing more spills to local memory.
int64_t registerCap(int64_t threads, const GpuArch &arch);
/// Elements a thread stages in registers per fetch (the code generator's
/// kMaxStagedFetch: past it the fetch stores as it loads).
constexpr int64_t kStagedFetchLimit = 16;
/// How far registersPerThread may exceed the cap before COEF_r calls the
/// set spilling: about its rms error against ptxas (29). Held to the cap,
/// ptxas often fits a set the estimate puts a little over it.
constexpr int64_t kRegisterEstimateError = 32;
/// Loads a thread keeps in flight in a fetch past kStagedFetchLimit, which
/// stores as it loads: nvcc unrolls the loop by four and waits for each
/// group (SASS of a BERT projection on sm_90).
constexpr int64_t kDirectFetchInFlight = 4;
/// How many times a C_input iteration's fetch waits out the global
/// latency: once when it stages its elements in registers, once per
/// kDirectFetchInFlight elements a thread when it does not.
double fetchLatencyRounds(const OpDesc &d, const TileParams &p);
int64_t numBlocks(const OpDesc &d, const TileParams &p);

/// The n-way bank conflict of one warp-wide shared-memory load: the largest
/// number of distinct 4-byte words that fall into one bank (1: none). Lanes
/// reading the same word are served by one broadcast.
int warpConflictDegree(const std::vector<int64_t> &wordAddresses, int banks);

/// COEF_bc of op d under p: the conflict degree of its representative
/// shared-memory loads, weighted by how many of each a thread issues.
double coefBc(const OpDesc &d, const TileParams &p, const GpuArch &arch);

/// OI_TB = COMP_block / (SIZE_element x TRANS_global x NUM_trans), with
/// TRANS_global in elements of op d.
double oiTB(const OpDesc &d, double compBlock, double numTrans,
            int transElements);
/// GMRatio = min(1, OI_TB / (R_peak / BW_global)).
double gmRatio(double oiTB, double ridgePoint);
/// SMRatio = min(1, (COMP_thread / N_load) / (LAT_shared * COEF_bc)), the
/// thesis's form, for one warp per scheduler. With `warpsPerScheduler` > 1
/// the other resident warps' operations also hide the latency (our
/// extension: measured on an H200, small thread tiles with many warps win
/// where the one-warp form pruned them), so the ratio is multiplied by it.
/// With fewer warps than schedulers on the SM (`warpsPerScheduler` < 1) the
/// idle schedulers' share is lost: the ratio is multiplied by
/// busySchedulers (measured: one-warp blocks topped the ranking of
/// ResNet-50's 3x3 convs at batch 1 and ran 3-8x slower than the fastest).
double smRatio(double compThread, double nLoad, double latShared, double coefBc,
               double warpsPerScheduler = 1);
/// SMRatio of a busy scheduler before it is clamped at 1.
double latencyRatio(double compThread, double nLoad, double latShared,
                    double coefBc, double warpsPerScheduler = 1);
/// The share of an SM's schedulers that have a warp to issue.
double busySchedulers(double warpsPerScheduler);
/// The shared-memory roofline (not in the thesis, whose SMRatio bounds only
/// the latency of shared loads): an SM's shared memory serves one word per
/// bank a cycle (CUDA C++ Programming Guide: each bank has a bandwidth of
/// 32 bits per clock cycle), so a warp-wide load takes warpSize / banks
/// cycles per conflict degree, while the SM does PERF_peak / (NUM_SM clock)
/// FLOPs a cycle. The share of peak a thread's COMP_thread FLOPs per N_load
/// loads leave: COMP_thread banks / (N_load COEF_bc FLOPs a cycle), not
/// clamped. A 128-bit load counts as one load (N_load's count), so the
/// bound stays optimistic. Measured on an H200: ResNet-50's batch-1 3x3
/// convs ran one output a thread (two shared loads an FMA) 1.65x slower
/// than four along H, which the latency term ranked worse (fewer warps).
double sharedThroughputRatio(double compThread, double nLoad, double coefBc,
                             const GpuArch &arch);

/// Warps each scheduler of an SM can interleave for p's blocks, `resident`
/// of them on the SM (4 schedulers per SM on every GPU we model: Volta to
/// Hopper, CDNA's 4 SIMDs per CU); below 1 when schedulers idle.
double warpsPerScheduler(const TileParams &p, int64_t resident,
                         const GpuArch &arch);

/// Blocks resident on a busy SM: as many as fit (`perSM`, blocksPerSM), but
/// no more than a grid of `blocks` gives each SM. A grid under one wave
/// leaves block slots empty without leaving SMs idle; WBRatio and the warps
/// that hide latency count the blocks there are (our extension: measured on
/// an H200, BERT's batch-1 GEMMs ran fastest with 256-thread blocks, 1 or 2
/// an SM, which the capacity-based form ranked below 1024-thread blocks).
int64_t residentBlocks(int64_t blocks, int64_t perSM, const GpuArch &arch);

/// The waves in which a busy SM runs its share of a grid of `blocks`,
/// `resident` at a time (at least one).
int64_t wavesPerSM(int64_t blocks, int64_t resident, const GpuArch &arch);

/// WBRatio: blocks over the slots of the waves they occupy.
double wbRatio(int64_t numBlocks, int64_t slotsPerWave);

/// Blocks of p resident on one SM (0 if one does not fit).
int64_t blocksPerSM(const OpDesc &d, const TileParams &p, const GpuArch &arch);

/// The issue roofline (not in the thesis) for convs, matmuls and depthwise
/// convs: PUL = COEF_r x min(GMRatio, SMRatio x WBRatio) x LATRatio, a
/// roofline's least ceiling instead of the thesis's product, with
/// - GMRatio = min(1, OI_TB / ridge x min(1, active SMs x bwL2PerSM /
///   BW_global)): a grid on few SMs cannot draw all of BW_global;
/// - SMRatio: the SM's ceiling while busy, its waves' work at peak over the
///   longer of its instruction issue and its shared-memory wavefronts. A
///   thread issues COMP_thread / 2 FFMAs, N_load x COEF_bc shared loads and
///   kFetchInstructions per element it fetches; a scheduler issues one a
///   cycle while its warps cover each other's waits (efficiency
///   min(1, warps / (1 + kIssueLatencyCycles))); shared memory serves one
///   wavefront a cycle.
/// The product compounds bottlenecks that overlap on a GPU (memory and
/// issue run in different warps at once): on an H200 every set of BERT's
/// pooler GEMV bounded at 155-160 us ran in 56-190 us, and the ranking by
/// the product kept BERT's fastest GEMM set in 2 of 6 ops. ncu on the
/// generated GEMMs shows them bound by instruction issue: 50 % of issue
/// slots used with 4 warps a scheduler, 31 % with 2, and 31.6 instructions
/// per fetched element beside the FFMAs.
bool issueRoofline(OpKind kind);
/// Cycles a warp waits, on average, after each instruction it issues before
/// it can issue the next: ncu measured 5.2-7.1 on the generated GEMMs (warp
/// cycles per issued instruction, less the cycles spent not selected); the
/// bound takes about half, for better-scheduled code. Of 3, 4, 5 and 6 on
/// the stored validation timings, 3 ranked best.
constexpr double kIssueLatencyCycles = 3;
/// Instructions a thread issues per element it fetches into a shared tile
/// (load, store, index arithmetic, bounds checks): ncu measured 31.6 on the
/// generated GEMMs; the bound takes half (of 16, 24 and 32, 16 ranked best).
constexpr double kFetchInstructions = 16;
/// Instructions per element of p's fetch: kFetchInstructions an access,
/// where a matmul operand's access moves four floats when the code
/// generator's fetch can (codegen/emit/Cuda.cpp, planFetch: the operand's
/// unit axis steps in fours from 16-byte-aligned starts in tensor and tile);
/// the mean over the block's fetched elements. Convs' fetches (padding
/// checks, windows) are counted one float an access.
double fetchInstructionsPerElement(const OpDesc &d, const TileParams &p);
/// Cycles a block alone takes to issue one C_input iteration (not in the
/// thesis): each scheduler issues at most one instruction a cycle, so its
/// ceil(warps / 4) warps of the block take `instructions` cycles each.
/// The iteration's fetch, barriers and compute run in turn (the generated
/// kernels do not prefetch), so each iteration of the latency chain is
/// LAT_iter per fetchLatencyRounds plus this: on MobileNetV2's batch-64
/// 1x1 convs (H200) 512-thread blocks, one an SM, took 1.6 us an iteration
/// against 0.25 for LAT_iter alone.
double blockIssueCycles(double instructions, const TileParams &p,
                        const GpuArch &arch);
/// Iterations an SM completes per cycle with `customers` blocks resident,
/// each alternating between `delay` cycles of waiting (LAT_iter x fetch
/// rounds, and its own issue beyond its share of the SM's) and `demand`
/// cycles of the SM's issue slots, which the blocks share (not in the
/// thesis): exact mean-value analysis of that closed queue. One block gives
/// 1 / (demand + delay); many give 1 / demand. The roofline's max(blocks x
/// demand, demand + delay) assumes the blocks' waits never coincide: on
/// ResNet-50's batch-64 convs (H200, ncu) the fastest sets issued in 65-78 %
/// of cycles and the first the bound ranked in 52-73 %, in part from stalls
/// on global loads, and it ranked the fastest set of layer2.1's 3x3 conv
/// 4,096th, the first pruned; with the queue, 3,051st.
double closedQueueThroughput(int64_t customers, double demand, double delay);
/// Sets b's GMRatio and SMRatio under the issue roofline and returns PUL
/// before LATRatio (b's other fields computed).
double issueRooflinePul(Bound &b, const OpDesc &d, const TileParams &p,
                        const GpuArch &arch);

/// The streaming bound (not in the thesis) for elementwise chains and batch
/// normalisation, which read global memory straight into registers: no
/// shared loads, so the thesis's SMRatio (shared-memory latency) does not
/// apply; it ranked one element a thread first, and those sets ran 2-5x
/// slower than the 8-16-element winners (H200). A
/// busy SM's time is
///   max(T_dispatch, T_issue + max(T_DRAM, T_L2, T_L1)) / (block slots
///   used),
/// - T_dispatch: its blocks x blockDispatchCycles (measured: a grid of
///   many 64-thread blocks ran at exactly this floor);
/// - T_issue: its warps x streamWarpInstructions / 4 schedulers;
/// - T_DRAM: the bytes read and written once each, at BW_global;
/// - T_L2: what its warps move from L2 (warpTraffic: requests as the
///   emitter makes them, lines' transactions) at bwL2;
/// - T_L1: the sectors each of its requests looks up, at
///   kL1SectorsPerCycle.
/// Issue and memory add, not overlap: a thread's loads wait for their
/// address arithmetic, its stores for the loads. ncu on 600 timed sets of
/// DenseNet-121's and ResNet-50's concats and Adds (H200) shows the
/// fastest at 56-67 % of issue slots
/// and 90 % of DRAM bandwidth together; with max() in place of the sum the
/// bound ranked those ops' fastest sets 68th-129th of 200, with the sum
/// 3rd-41st. So this is an estimate where both are large, a bound where one
/// dominates. PUL = COEF_r x work / (time x PERF_peak); SMRatio is set so
/// GMRatio x SMRatio x WBRatio = PUL.
bool streamingRoofline(OpKind kind);
/// Instructions a warp of the streaming bound issues: ncu counted 64 for
/// one element a thread (index arithmetic, the block's coordinates) on
/// the generated concats and Adds (H200), and per element a load and its
/// address for each full-size read, one per operation and one for the
/// store (an Add of 16 elements a thread measured 6.3 an element).
constexpr double kStreamWarpInstructions = 64;
constexpr double kStreamReadInstructions = 2;
constexpr double kStreamStoreInstructions = 1;
double streamWarpInstructions(const Bound &b, const TileParams &p);
/// The vector width, in elements, of the emitter's global accesses along
/// W (fp32 words at a multiple of 4 or 2 in every thread, 16-bit elements
/// at a multiple of 8, 4 or 2: 128-, 64- and 32-bit loads and stores),
/// else 1.
int vectorWidth(const OpDesc &d, const TileParams &p);
/// What one full-size access of the first warp of a block moves in a dense
/// N x K x H x W tensor, in `width`-element requests (the lanes' elements
/// inside the tensor): `l1`, the 32-byte sectors its requests look up;
/// `l2Load` and `l2Store`, what it moves from or to L2 in sectors, one
/// transaction per 128-byte line a request needs, each costing at least
/// kL2MinSectors. A load's sectors go once (the warp's later requests for
/// them hit L1; ncu's L2 sectors of 600 sets followed that count with
/// Spearman 0.98), a store's every time.
struct WarpTraffic {
  double l1 = 0, l2Load = 0, l2Store = 0;
};
WarpTraffic warpTraffic(const OpDesc &d, const TileParams &p,
                        const GpuArch &arch, int width);
/// The sectors an L2 transaction costs at least. A request needing one
/// sector of a line took the time of two: on an H200, the 56x56
/// concats' and Add's sets whose lanes read 32 bytes of each of 8 rows
/// (8 lines, a sector each) ran 1.35-1.59x slower than the fastest, which
/// the bound ranked first with one; with 2, its first 8 of each op's 200
/// timed sets held one within 4 % of the fastest (chosen of 1, 2 and 4:
/// 4 ranked ResNet-50's layer3 Add's fastest 46th, 1.16x).
constexpr double kL2MinSectors = 2;
/// Sectors an SM's L1 serves a cycle to the streaming bound's accesses
/// (T_L1 = warpTraffic's l1 sectors / this). Chosen of 1, 2 and 4 on 600
/// timed sets (H200) as the one ranking best; without the term the
/// bound ranked first the sets whose lanes each read 8 consecutive floats
/// (32 sectors an access), which ran 3x slower than the fastest.
constexpr double kL1SectorsPerCycle = 2;
/// Sets b's GMRatio, SMRatio and time under the streaming bound and
/// returns PUL (b's other fields computed).
double streamingPul(Bound &b, const OpDesc &d, const TileParams &p,
                    const GpuArch &arch);
/// The bound of a channel-vector kernel (OpDesc::channelVector): its input
/// and output moved through DRAM once, in the blocks' waves.
double channelVectorPul(Bound &b, const OpDesc &d, const TileParams &p,
                        const GpuArch &a);

/// Whether every target of `arch` has mma.sync tensor cores (NVIDIA sm_80
/// on): where 16-bit convs run channels-last (cuts-channels-last).
bool hasMmaSync(const GpuArch &arch);
/// Whether op d can run on `arch`'s tensor cores with `instr`: a matmul of
/// 16-bit operands, A untransposed, rows of whole 16-byte copies (K, and N
/// where B is not transposed, multiples of 8); mma.sync from sm_80 on,
/// wgmma on sm_90 (sm_90a code) with B stored N x K, as it reads it.
bool tensorCoreAllows(const OpDesc &d, const GpuArch &arch, MatrixInstr instr);
/// Calls fn for every tensor-core tiling of d (none if it cannot use them):
/// mma.sync with 1-4 x 1-4 warps (at most 8) of 1-4 x 2-8 tiles of 16 x 8,
/// wgmma with 1-2 warpgroups of 1-2 m64 products n32-n256 wide; C_input
/// 16, 32 or 64, 2-4 stages; blocks at most a power of two past the matrix.
void forEachTensorCoreParams(const OpDesc &d, const GpuArch &arch,
                             const std::function<void(const TileParams &)> &fn);
/// The shared tiles of a tensor-core set: `stages` copies of A's Nb x Cin
/// and B's Cin x Kb (Kb x Cin when transposed), rows padded by 16 bytes for
/// mma.sync, stages whole 1024-byte swizzle patterns for wgmma (the code
/// generator's layout: CodegenTensorCoreTest holds them equal).
int64_t tensorCoreSharedBytes(const OpDesc &d, const TileParams &p);

/// The most accumulators a thread of a chained product holds (its block's
/// output tile over its threads): past this its registers would spill.
constexpr int64_t kChainAccumulators = 128;

/// The stages a tensor-core set fills: all of a warp-specialised loop's; a
/// multistage loop of fewer K slices than stages never touches the others.
int64_t filledStages(const OpDesc &d, const TileParams &p);
/// Registers a lane of a tensor-core set needs: its accumulators, one
/// step's fragments (mma.sync) and 32 for indices and addresses.
int64_t tensorCoreRegisters(const TileParams &p);
/// The tensor-core bound (not in the thesis): PUL of the tensor peak
/// (b.peak) = COEF_r x min(GMRatio, SMRatio x WBRatio), where
/// - GMRatio is the work at peak over the longer of the compulsory bytes
///   (operands and result once) at BW_global and the blocks' tiles at bwL2;
/// - SMRatio is a block's products at its SM's share of the peak over the
///   bytes its tiles move through shared memory at banks x 4 bytes a cycle:
///   cp.async's writes once, ldmatrix's reads per warp per 16-deep step
///   (mma.sync), each m64 product's reads of its A rows and all of B
///   (wgmma); for mma.sync times the busy schedulers' share (a warp issues
///   to its own sub-core's tensor core);
/// and the latency chain has the pipeline's slices ahead in flight: a
/// wave takes LAT_iter x (1 + (iterations - 1) / ahead).
/// Sets b's GMRatio, SMRatio, headroom and chain; returns PUL before
/// LATRatio.
double tensorCorePul(Bound &b, const OpDesc &d, const TileParams &p,
                     const GpuArch &arch);

/// What register-level fusion adds to the anchor op of a group (§3.2.4):
/// the fused ops' computation, and the global transactions and shared loads
/// of the operands they read from outside the group.
struct FusedExtra {
  double compBlock = 0, compThread = 0, compTotal = 0;
  double numTrans = 0, nLoad = 0;
  /// Elements the fused ops read from outside the group (a residual).
  double elements = 0;
};

/// Sets COEF_bc and what follows from it (SMRatio, headroom, PUL, the time
/// bound) in a bound whose other factors are computed: the search computes
/// them once per layout group and this per FORMAT_shared.
void setCoefBc(Bound &b, double coefBc, const OpDesc &d, const TileParams &p,
               const GpuArch &arch);

/// Every factor and PUL. `gmOverride` (used for a shared-memory-level fused
/// successor, whose inputs are already on chip) forces GMRatio.
/// `knownCoefBc` (> 0) skips the bank-conflict count when the caller has it.
Bound evaluateBound(const OpDesc &d, const TileParams &p, const GpuArch &arch,
                    double gmOverride = -1, const FusedExtra *extra = nullptr,
                    double knownCoefBc = -1);

} // namespace cuts

#endif // CUTS_PERFMODEL_ROOFLINE_H
