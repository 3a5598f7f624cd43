/*===- cuts.h - the cuts runtime C API ---------------------------*- C -*-===//
 *
 * Load a compiled model (model.cuts), run it on a GPU. The runtime needs the
 * CUDA driver only (libcuda.so.1, loaded with dlopen when the first model is
 * loaded), never MLIR or the compiler.
 *
 *   cuts_model   an immutable loaded model: kernels, weights on the device.
 *                Thread-safe: any number of threads may create sessions
 *                from one model and query it.
 *   cuts_session what one stream of requests needs: the activation arena,
 *                the stream, an optional captured CUDA graph. Not
 *                thread-safe: use one session per worker thread.
 *
 * Every call returns a cuts_status; on failure cuts_last_error() gives a
 * message (thread-local, valid until the thread's next cuts call).
 *
 * Batch profiles (cuts compile --batch 1,8,32): one model serves any batch
 * from 1 to its largest profile's. A run at a batch some profile has runs
 * that profile's plan; any other batch runs the smallest larger profile,
 * its inputs zero-padded and its outputs sliced by the session (the run
 * info says which). The batch is axis 0 of every batched input and output
 * (cuts_model_batch_axis); cuts_model_input/output give their shapes at
 * the largest profile loaded.
 *
 *===----------------------------------------------------------------------===*/
#ifndef CUTS_CUTS_H
#define CUTS_CUTS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1: float32 tensors only.
 * 2: every dtype of cuts_dtype binds (cuts_tensor_info reports the model's),
 *    cuts_dtype_size and cuts_dtype_name. Callers of version 1 are
 *    unaffected: CUTS_FLOAT32 keeps its value.
 * 3: cuts_model_kernel_work and cuts_model_target (the work and the
 *    ceilings that achieved rates are measured against).
 * 4: batch profiles and data parallelism: cuts_load_options.max_batch and
 *    the device list (callers of version 3 must now zero the options they
 *    pass), cuts_model_num_devices, cuts_model_num_profiles,
 *    cuts_model_profile_batch, cuts_model_max_batch,
 *    cuts_model_batch_axis, cuts_session_set_batch and
 *    cuts_session_run_info.
 * 5: pipelined host runs (cuts_session_submit_host, cuts_session_wait,
 *    cuts_session_set_preload), pinned host memory (cuts_host_alloc,
 *    cuts_host_free) and the data-movement breakdown
 *    (cuts_session_movement), cuts_load_options.weight_source and
 *    cuts_model_swap_weights.
 * 6: cuts_load_options.weight_codec (weights sent encoded between devices)
 *    and cuts_movement's codec_ms and broadcast_bytes (callers of version
 *    5 recompile: both structs grew).
 * 7: cuts_load_options.weight_budget (weights streamed from storage) and
 *    cuts_movement's streamed_bytes and stream_read_ms (callers of
 *    version 6 recompile: both structs grew).
 * 8: cuts_load_options.pipeline_stages and pipeline_stage (one stage of the
 *    plan loaded; callers of version 7 recompile) and cuts_device_count. */
#define CUTS_API_VERSION 8

typedef enum cuts_status {
  CUTS_OK = 0,
  CUTS_ERROR_INVALID_ARGUMENT = 1, /* null pointer, wrong name/shape/type */
  CUTS_ERROR_BAD_ARTIFACT = 2,     /* truncated, corrupted, wrong version */
  CUTS_ERROR_NO_DEVICE = 3,        /* no CUDA driver or no GPU */
  CUTS_ERROR_NO_CUBIN = 4,         /* artifact not compiled for this GPU */
  CUTS_ERROR_OUT_OF_MEMORY = 5,    /* device memory */
  CUTS_ERROR_CUDA = 6,             /* any other CUDA driver error */
  CUTS_ERROR_IO = 7                /* reading the file */
} cuts_status;

/* The element type of an input or output. The values are ONNX's
 * TensorProto.DataType values and never change. Elements are little-endian
 * and packed; CUTS_BOOL is one byte per element holding 0 or 1 (C's bool,
 * C++'s bool); CUTS_FLOAT16 and CUTS_BFLOAT16 are 16-bit patterns. */
typedef enum cuts_dtype {
  CUTS_FLOAT32 = 1,
  CUTS_UINT8 = 2,
  CUTS_INT8 = 3,
  CUTS_INT16 = 5,
  CUTS_INT32 = 6,
  CUTS_INT64 = 7,
  CUTS_BOOL = 9,
  CUTS_FLOAT16 = 10,
  CUTS_FLOAT64 = 11,
  CUTS_BFLOAT16 = 16
} cuts_dtype;

typedef struct cuts_model cuts_model;
typedef struct cuts_session cuts_session;

/* What a model input or output is. Pointers stay valid while the model is
 * loaded. */
typedef struct cuts_tensor_info {
  const char *name;
  cuts_dtype dtype;
  int rank;
  const int64_t *shape;
} cuts_tensor_info;

/* A caller's buffer for one input or output, by name. `data` is device
 * memory for cuts_session_run and host memory for cuts_session_run_host,
 * and holds the product of the shape times cuts_dtype_size(dtype) bytes;
 * device memory starts 16-byte aligned (as cudaMalloc's does), since the
 * kernels move up to 16 bytes at a time.
 * rank/shape/dtype must match the model's (they are checked; no dtype is
 * converted). */
typedef struct cuts_binding {
  const char *name;
  cuts_dtype dtype;
  int rank;
  const int64_t *shape;
  void *data;
} cuts_binding;

/* How the entries of a device list after the first get the weights: each
 * from host memory (the default), or from the first entry's by peer copies,
 * or by an NCCL broadcast from it (NCCL loaded with dlopen from
 * libnccl.so.2; one rank a device, so the list may not repeat one). */
typedef enum cuts_weight_source {
  CUTS_WEIGHTS_HOST = 0,
  CUTS_WEIGHTS_PEER = 1,
  CUTS_WEIGHTS_NCCL = 2
} cuts_weight_source;

/* How the weights the first entry sends the others (CUTS_WEIGHTS_PEER or
 * _NCCL) travel: as they are; ScaleDNN's 3:1 fp32 compression (each value
 * keeps a sign, 4 exponent bits and 5 mantissa bits, three to a 32-bit
 * word; groups the format cannot hold go exactly); or bf16 truncation, the
 * comparison point. Only fp32 weights are encoded. Every entry, the first
 * too, then holds the decoded weights, so every slice of a batch sees the
 * same model. Needs an artifact compiled with --weight-codecs. With one
 * entry, peer copies send nothing and the codec does nothing; an NCCL
 * broadcast in place still encodes and decodes. */
typedef enum cuts_weight_codec {
  CUTS_CODEC_NONE = 0,
  CUTS_CODEC_3TO1 = 1,
  CUTS_CODEC_BF16 = 2
} cuts_weight_codec;

/* Zero-initialise, then set what differs from the defaults. */
typedef struct cuts_load_options {
  int device;        /* CUDA device ordinal (default 0) */
  int64_t max_batch; /* the largest batch runs will bind; profiles above the
                        smallest one that serves it are not loaded, and the
                        arena fits the largest loaded (0: every profile) */
  /* Data parallel: the model on each of devices[0..num_devices) (a device
   * may repeat; each entry has its own weights and, per session, its own
   * stream and buffers); `device` is then unused. A host run splits its
   * batch along axis 0 across the entries, in proportion to device_shares
   * (NULL: equal), each slice copied from the caller's memory straight to
   * its device and its outputs straight back. Needs batch profiles.
   * Tensor parallel (cuts compile --tensor-parallel N): the list has N
   * entries and entry e runs rank e, with its part of the weights (from
   * the host). cuts_session_run takes device memory on the first entry's
   * device, and runs, host runs and benchmarks run every rank, its
   * all-reduces on the copy engines; the first entry's stream orders the
   * run. Such runs are not captured as CUDA graphs, and submit_host
   * returns once the run is done. */
  const int *devices;
  int num_devices; /* 0: `device` alone */
  const double *device_shares;
  /* The baseline the split is measured against (DataParallel's): the
   * whole batch copied to the first device, its slices sent to the others
   * from there and their outputs gathered back there, then copied out. */
  int master_gpu;
  int weight_source; /* a cuts_weight_source */
  int weight_codec;  /* a cuts_weight_codec */
  /* Weights streamed from storage (BigCuts): 0 keeps every weight on the
   * device. Otherwise at most this many bytes of device memory hold
   * weights: the plan's steps are cut into chunks whose weights fill half
   * of it, and while one chunk's kernels run, the next chunk's weights are
   * read from the artifact file (O_DIRECT where the file system allows)
   * and copied in. Needs cuts_model_load (a file) and one device; runs
   * are then not captured as CUDA graphs. */
  uint64_t weight_budget;
  /* A pipeline stage (BigCuts' DIM_P): with pipeline_stages > 1, the plan
   * is cut into that many stages of about equal weight bytes and only
   * stage pipeline_stage is loaded, with its weights. Its inputs are the
   * tensors live across the cut before it (the model's inputs for stage
   * 0) and its outputs those live across the cut after it (the model's
   * outputs for the last stage), named as the artifact names them, so that
   * one stage's outputs are the next one's inputs, in order. One device;
   * no batch profiles or tensor-parallel plans. 0 or 1: the whole plan. */
  int pipeline_stages;
  int pipeline_stage;
} cuts_load_options;

int cuts_api_version(void);
/* CUDA devices on this machine: CUTS_OK and their count in *count, or
 * CUTS_ERROR_NO_DEVICE (and 0) where there is no CUDA driver or no
 * device. */
cuts_status cuts_device_count(int *count);
const char *cuts_last_error(void);
const char *cuts_status_name(cuts_status s);
/* Bytes of one element (CUTS_BOOL: 1), 0 for a value that is no
 * cuts_dtype. */
size_t cuts_dtype_size(cuts_dtype dtype);
/* "float32", "int64", "bool", ... (the artifact's names), "unknown" for a
 * value that is no cuts_dtype. */
const char *cuts_dtype_name(cuts_dtype dtype);

/* Loads and validates an artifact, creates the kernels and uploads the
 * weights. options may be NULL. A model with library kernels loads cuDNN 9
 * (libcudnn.so.9) too, and fails with CUTS_ERROR_CUDA without it. */
cuts_status cuts_model_load(const char *path, const cuts_load_options *options,
                            cuts_model **model);
cuts_status cuts_model_load_memory(const void *data, size_t size,
                                   const cuts_load_options *options,
                                   cuts_model **model);
void cuts_model_free(cuts_model *model);

int cuts_model_num_inputs(const cuts_model *model);
int cuts_model_num_outputs(const cuts_model *model);
cuts_status cuts_model_input(const cuts_model *model, int i,
                             cuts_tensor_info *info);
cuts_status cuts_model_output(const cuts_model *model, int i,
                              cuts_tensor_info *info);
/* Bytes of device memory a session's activation arena takes (peak of the
 * liveness-based plan), and the weights' bytes. */
uint64_t cuts_model_arena_bytes(const cuts_model *model);
uint64_t cuts_model_weight_bytes(const cuts_model *model);
/* The architecture ("sm_90") whose kernels were loaded. */
const char *cuts_model_arch(const cuts_model *model);

/* A hot weight swap: the weights of `path`, an artifact of the same model
 * (its weight tensors where this model's lie, as a recompile of the same
 * graph with new values has them), replace the model's on every entry of
 * its device list, distributed as at load (weight_source). Runs keep going
 * meanwhile and none fails: each session finishes its runs on the old
 * weights and takes the new ones at its next run; the old are freed when
 * no session holds them. On failure the old weights stay. */
cuts_status cuts_model_swap_weights(cuts_model *model, const char *path);

/* The batch profiles loaded (1 for a model compiled without --batch) and
 * the batch profile i serves (0 without profiles), in increasing order. */
int cuts_model_num_profiles(const cuts_model *model);
int64_t cuts_model_profile_batch(const cuts_model *model, int i);
/* The largest batch a run may bind: max_batch where given at load, else
 * the largest profile's; 0 for a model without batch profiles. */
int64_t cuts_model_max_batch(const cuts_model *model);
/* The entries of the device list the model is loaded on (1 without one). */
int cuts_model_num_devices(const cuts_model *model);
/* The axis of input (or, is_output nonzero, output) i that is the batch:
 * 0, or -1 where it has none (every tensor of a model without profiles);
 * -2 for an index out of range. */
int cuts_model_batch_axis(const cuts_model *model, int is_output, int i);

/* A session runs on `stream` (a CUstream / cudaStream_t) or, if NULL, on a
 * stream of its own. With use_cuda_graph, the first run for a given set of
 * buffers is captured into a CUDA graph and later runs with the same
 * buffers replay it. A run that is not replayed runs each library step
 * that has one as its generated alternative (a cuDNN call's host work
 * would outlast its kernel there); a replayed one runs the library call
 * the tuner timed faster on the GPU. */
cuts_status cuts_session_create(cuts_model *model, void *stream,
                                int use_cuda_graph, cuts_session **session);
void cuts_session_free(cuts_session *session);

/* Enqueues one run on the session's stream (asynchronous: synchronise the
 * stream before reading the outputs). */
cuts_status cuts_session_run(cuts_session *session, const cuts_binding *inputs,
                             int num_inputs, const cuts_binding *outputs,
                             int num_outputs);
/* Copies host inputs in, runs, copies the outputs back, waits. */
cuts_status cuts_session_run_host(cuts_session *session,
                                  const cuts_binding *inputs, int num_inputs,
                                  const cuts_binding *outputs, int num_outputs);
/* Pipelined host runs. submit_host enqueues a run from host inputs to
 * host outputs (as cuts_session_run_host's) and returns once it is
 * enqueued, with a ticket to wait for. On each device-list entry the
 * inputs are copied in on a copy stream beside the session's, into one of
 * two buffer sets, while the run before computes (pre-loading); the
 * outputs are copied back on a second copy stream. Up to two runs are in
 * flight: submitting a third first waits for the oldest. The host buffers
 * must stay valid, the inputs unchanged, until the run's wait returns.
 * Host memory from cuts_host_alloc (or otherwise page-locked) is copied by
 * DMA; other memory is staged through the session's pinned buffers.
 * wait returns once the run `ticket` and every earlier one have finished,
 * with the first error among them; waiting again for a finished ticket
 * returns CUTS_OK. cuts_session_run_host is submit_host and wait; freeing a
 * session waits for its runs. */
cuts_status cuts_session_submit_host(cuts_session *session,
                                     const cuts_binding *inputs, int num_inputs,
                                     const cuts_binding *outputs,
                                     int num_outputs, uint64_t *ticket);
cuts_status cuts_session_wait(cuts_session *session, uint64_t ticket);
/* Pre-loading on (the default) or off: off, a run's inputs are copied in
 * only after the run before has computed, as a comparison point. */
cuts_status cuts_session_set_preload(cuts_session *session, int on);
/* Page-locked host memory that every device copies by DMA; freed with
 * cuts_host_free (NULL is ignored). */
cuts_status cuts_host_alloc(size_t bytes, void **ptr);
void cuts_host_free(void *ptr);

/* Where the time of host runs went on one device-list entry, summed over
 * the runs since the session was created or last reset, from CUDA events
 * on its streams. */
typedef struct cuts_movement {
  int64_t runs;             /* host runs this entry took part in */
  double h2d_ms;            /* inputs copied from the host */
  double h2d_hidden_ms;     /* of h2d_ms, the time this entry's previous run was
                               computing (pre-loading) */
  double peer_ms;           /* master-GPU baseline: the slice sent from the
                               first device */
  double compute_ms;        /* the run, from its first kernel to its last */
  double gather_ms;         /* outputs assembled: the master-GPU baseline's
                               peer copies back to the first device, and the
                               host copies out of pinned staging */
  double d2h_ms;            /* outputs copied to the host */
  double broadcast_ms;      /* the current weights' distribution to this device,
                               at load or the last swap (not per run) */
  double codec_ms;          /* of broadcast_ms, encoding on the first entry and
                               decoding on this one (weight_codec) */
  uint64_t broadcast_bytes; /* bytes sent to this entry from the first */
  uint64_t streamed_bytes;  /* weights read from storage (weight_budget) */
  double stream_read_ms;    /* the host's time reading them */
} cuts_movement;
cuts_status cuts_session_movement(const cuts_session *session, int entry,
                                  cuts_movement *movement);
cuts_status cuts_session_reset_movement(cuts_session *session);

/* Waits for the session's stream. */
cuts_status cuts_session_synchronize(cuts_session *session);

/* What the session's last run ran: the batch its bindings carried and the
 * batch of the profile that served it (larger where the inputs were
 * padded); both 0 before any run and for a model without profiles. */
typedef struct cuts_run_info {
  int64_t batch;
  int64_t profile_batch;
} cuts_run_info;
cuts_status cuts_session_run_info(const cuts_session *session,
                                  cuts_run_info *info);
/* The batch cuts_session_benchmark runs (padded, with the copies a
 * caller's run makes, where no profile has it); 0 (the default): the
 * largest profile loaded. Out of 0..max_batch is an error. */
cuts_status cuts_session_set_batch(cuts_session *session, int64_t batch);
/* Times `iters` runs with CUDA events after `warmup` runs, using
 * internally allocated inputs and outputs; writes each run's milliseconds
 * to times_ms[0..iters). The inputs hold values valid for any model:
 * floating-point 0.5, integers 0 (an index into any table), bools 1 (true,
 * as an attention mask's "attend"). */
cuts_status cuts_session_benchmark(cuts_session *session, int warmup, int iters,
                                   float *times_ms);

/* The model's kernels in plan order (the largest profile loaded): name,
 * one-line summary, and the performance model's lower-bound time in
 * microseconds. A kernel that is a
 * library call (cuDNN) is named by its library, "cudnn.conv". */
int cuts_model_num_kernels(const cuts_model *model);
cuts_status cuts_model_kernel(const cuts_model *model, int i, const char **name,
                              const char **summary, double *bound_us);
/* The least work kernel i must do, from the compiler: its ops' FLOPs (an
 * FMA is 2) and the bytes it moves reading each input and writing each
 * output once; 0 where the artifact does not say. Either result may be
 * NULL. Divided by the kernel's time they give its achieved rates. */
cuts_status cuts_model_kernel_work(const cuts_model *model, int i,
                                   double *flops, double *bytes);
/* The GPU descriptor the model was compiled for ("H200"; "" if the
 * artifact does not name one) and its ceilings: the peak in FLOP/s of the
 * units its precision runs on (FP32 SIMT; the tensor cores for fp16 and
 * bf16) and global-memory bandwidth in bytes/s (0 where unknown). Any
 * result may be NULL. */
cuts_status cuts_model_target(const cuts_model *model, const char **name,
                              double *peak_flops, double *bandwidth);
/* Times every kernel on its own (CUDA events around each launch, `iters`
 * runs after one warm-up run, internally allocated inputs): writes the
 * median milliseconds of kernel i to kernel_ms[i]. In a session that uses
 * a CUDA graph each kernel is timed in a graph of its own (ten launches of
 * it back to back), so a library call's host-side work does not count;
 * otherwise the launches are direct, and a library step that has a
 * generated alternative runs (and times) that kernel instead, as every run
 * without a graph does; the library kernel's entry is then 0. */
cuts_status cuts_session_profile(cuts_session *session, int iters,
                                 float *kernel_ms);

#ifdef __cplusplus
}
#endif

#endif /* CUTS_CUTS_H */
