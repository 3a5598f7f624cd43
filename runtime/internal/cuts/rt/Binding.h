//===- Binding.h - checking a caller's bindings against a model -*- C++ -*-===//
//
// What cuts_session_run and cuts_session_run_host check before touching the
// device: every input (or output) bound once by name, with the model's
// dtype, rank and shape, and data where there are bytes. Kept apart from
// the device code so that the checks are testable on a machine without a
// GPU.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_RUNTIME_BINDING_H
#define CUTS_RUNTIME_BINDING_H

#include "cuts/Artifact.h"
#include "cuts/cuts.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cuts::rt {

/// The C API's dtype of a manifest dtype ("int64" -> CUTS_INT64); nullopt
/// for a string the artifact does not know.
std::optional<cuts_dtype> apiDtype(const std::string &dtype);

/// "int64 (CUTS_INT64)"; for a value that is no cuts_dtype, "42 (not a
/// cuts_dtype)".
std::string describeDtype(cuts_dtype dtype);

/// Checks bindings `b[0..n)` against the plan's inputs (or outputs) and
/// puts their data pointers, in the plan's order, into `data`. A batched
/// tensor (Tensor::batchAxis) is expected with `batch` on axis 0 where
/// batch > 0. On a mismatch false, and `error` names the tensor and what
/// differs.
bool checkBindings(const Manifest &m, const cuts_binding *b, int n, bool inputs,
                   std::vector<void *> &data, std::string &error,
                   int64_t batch = 0);

/// The batch input bindings carry: axis 0 of every input the plan batches
/// (all equal, 1 to maxBatch). 0 for a plan without a batch; nullopt (and
/// `error`) where the bindings disagree or the batch is out of range.
/// Bindings it cannot read are left to checkBindings.
std::optional<int64_t> bindingBatch(const Manifest &m, const cuts_binding *b,
                                    int n, int64_t maxBatch,
                                    std::string &error);

/// The plan serving `batch` among plans of increasing `batches`: the exact
/// one, else the smallest larger (its inputs padded, its outputs sliced);
/// the last where batch is 0.
size_t choosePlan(const std::vector<int64_t> &batches, int64_t batch);

/// Whether `plan` (choosePlan's for `batch`) runs `batch`: a plan that
/// combines rows of its batch (Manifest::mixesRows) only its own batch,
/// never padded; else false and `error` says why.
bool runsBatch(const Manifest &plan, int64_t batch, std::string &error);

/// A batch split across devices in proportion to `shares` (positive):
/// rows per device, summing to `batch`, the remainder of the rounding to
/// the largest fractions (a device may get none).
std::vector<int64_t> splitBatch(int64_t batch,
                                const std::vector<double> &shares);

/// The bytes of tensor t at `batch` on its batch axis (t.bytes() where it
/// has none or batch is 0).
uint64_t bytesAtBatch(const Tensor &t, int64_t batch);

/// Generated kernels read and write fp32 tensors up to 16 bytes at a time
/// (codegen's vector runs), so device buffers a caller binds start on a
/// kBindingAlign boundary; cudaMalloc's are 256-byte aligned, the arena's
/// and the weights' offsets are too.
constexpr uintptr_t kBindingAlign = 16;

/// Checks that every binding with bytes (`data` in the model's order, as
/// checkBindings puts it) is kBindingAlign-aligned. On failure false, and
/// `error` names the tensor and its address.
bool checkAlignment(const Manifest &m, const std::vector<void *> &data,
                    bool inputs, std::string &error);

/// One element of the values benchmark and profile runs fill an input of
/// `dtype` with, as its bytes: 0.5 for floating point, 0 for integers (an
/// index valid in any table), 1 for bool. Empty for an unknown dtype.
std::vector<uint8_t> fillElement(const std::string &dtype);

} // namespace cuts::rt

#endif // CUTS_RUNTIME_BINDING_H
