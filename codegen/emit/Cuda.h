//===- Cuda.h - CUDA / HIP source from a kernel's DFGs ----------*- C++ -*-===//
//
// §3.4.1: the kernel header and index set-up, a cooperative coalesced fetch
// of every shared tile in its FORMAT_shared layout, the loop over C_input
// slices with the compute phase printed from thread 0's sub-DFG in reverse
// post-order, then the loop exit. CUDA and HIP differ only in the prologue.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_CODEGEN_EMIT_CUDA_H
#define CUTS_CODEGEN_EMIT_CUDA_H

#include "codegen/ops/Kernel.h"

#include <string>

namespace cuts::codegen {

enum class Target { Cuda, Hip };

/// The C type of a DFG element type in emitted code ("float", "long long",
/// "int", "bool").
const char *typeName(dfg::Type t);

/// The declaration of kernel parameter t: "const float *__restrict__" for
/// an input, without const for an output.
std::string paramType(const TensorArg &t);

/// The kernel's parameters in order, (name, declaration): its tensors, a
/// tensor it waits for (cuSync) without __restrict__ (another kernel writes
/// it meanwhile), then the semaphores: "cuts_posted" and "cuts_started"
/// (TilePost: its policy's semaphores, and the count of runs started),
/// "cuts_ready0".. (one per TileWait) and, with waits, "cuts_epoch" (the
/// runs finished: in run r, from 0, a semaphore is ready at (r + 1) x its
/// posts). A split-K kernel (Kernel::splitK) has "cuts_partials" and
/// "cuts_arrived" after its tensors (SplitKWorkspace) and no semaphores.
std::vector<std::pair<std::string, std::string>>
kernelParams(const Kernel &kernel);

/// What a split-K kernel needs besides its tensors: fp32 words for the
/// parts' partial sums (any contents) and a counter a tile, zero before its
/// first run (the kernel leaves them zero). Both 0 where K is whole.
struct SplitKWorkspace {
  int64_t partialFloats = 0, counters = 0;
};
SplitKWorkspace splitKWorkspace(const Kernel &kernel);

/// Whether `kernel` can split K in `parts` (Kernel::splitK): a plain
/// multistage or warp-specialised tensor-core product (no persistent loop,
/// patch, pooling, chain, prefetched residual or cuSync), its slices a
/// multiple of `parts`, each part at least two slices.
bool canSplitK(const Kernel &kernel, int64_t parts);

/// cuSync's wait kernel, cuts_sync_wait(started, cuts_epoch), one thread:
/// launched on the consumer's stream before the consumer, it returns once
/// the producer's first block has started in this run (a TilePost's
/// cuts_started counts the runs it started), so that no consumer
/// block is dispatched before the producer's (which then, on the stream of
/// higher priority, get every SM that frees before the consumer's do).
std::string syncWaitKernel(Target target = Target::Cuda);

/// cuSync's epoch kernel, cuts_sync_epoch(cuts_epoch), one thread: the
/// last step of a run, once every pair's consumer is done, counts the run.
std::string syncEpochKernel(Target target = Target::Cuda);

struct LaunchShape {
  int64_t blocks = 0;
  int64_t threads = 0;
  int64_t sharedBytes = 0; // dynamic shared memory the launch must give
};

/// The kernel's source: one `extern "C" __global__` function named
/// kernel.name with kernelParams.
std::string emitSource(const Kernel &kernel, Target target = Target::Cuda);

/// The grid and block the kernel is launched with (one dimension each) and
/// its dynamic shared memory (a launch above 48 KB must first raise the
/// function's limit: cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)).
LaunchShape launchShape(const Kernel &kernel);

/// Whether a tensor-core kernel has a prefetching variant (Kernel::prefetch):
/// a multistage loop whose exit stages an operand laid out as its output (a
/// residual) through shared memory, which the variant copies in at the start.
bool prefetchesOperand(const Kernel &kernel);

/// Whether a persistent kernel keeps B resident (Kernel::residentB): set,
/// and every tile reads the same B.
bool keepsB(const Kernel &kernel);

/// Whether a multistage tensor-core kernel stores its output through a
/// staged shared tile, which a chained product (Kernel::chain) reads.
bool stagesOutput(const Kernel &kernel);

/// Whether a tensor-core kernel's exit stages its output alone (no operand
/// read into the tile), one tile a block: what a fused pooling
/// (Kernel::pooled) reduces.
bool poolsStagedTile(const Kernel &kernel);

/// Whether a pooled implicit GEMM (Kernel::pooled; boxes of a plain conv's
/// pixels too) can read A from a patch of its input (Kernel::patchA): 16-bit
/// operands in 16-byte chunks of a pixel's channels (or of a stem's pixel
/// pair) at each window position, no producer warpgroup, the patch and the
/// stages within the shared memory `limit`.
bool patchable(const Kernel &kernel, int64_t limit);

} // namespace cuts::codegen

#endif // CUTS_CODEGEN_EMIT_CUDA_H
