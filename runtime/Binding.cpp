//===- Binding.cpp - dtypes, bindings and batch splits (Binding.h) --------===//

#include "cuts/rt/Binding.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace cuts::rt;

namespace {

std::string shapeString(const int64_t *shape, int rank) {
  std::string s = "[";
  for (int i = 0; i < rank; ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

struct DtypeInfo {
  cuts_dtype api;
  const char *name;  // the manifest's
  const char *label; // the enumerator
};

constexpr DtypeInfo kDtypes[] = {{CUTS_FLOAT32, "float32", "CUTS_FLOAT32"},
                                 {CUTS_UINT8, "uint8", "CUTS_UINT8"},
                                 {CUTS_INT8, "int8", "CUTS_INT8"},
                                 {CUTS_INT16, "int16", "CUTS_INT16"},
                                 {CUTS_INT32, "int32", "CUTS_INT32"},
                                 {CUTS_INT64, "int64", "CUTS_INT64"},
                                 {CUTS_BOOL, "bool", "CUTS_BOOL"},
                                 {CUTS_FLOAT16, "float16", "CUTS_FLOAT16"},
                                 {CUTS_FLOAT64, "float64", "CUTS_FLOAT64"},
                                 {CUTS_BFLOAT16, "bfloat16", "CUTS_BFLOAT16"}};

const DtypeInfo *findDtype(cuts_dtype d) {
  for (const DtypeInfo &i : kDtypes)
    if (i.api == d)
      return &i;
  return nullptr;
}

} // namespace

namespace cuts::rt {

std::optional<cuts_dtype> apiDtype(const std::string &dtype) {
  for (const DtypeInfo &i : kDtypes)
    if (dtype == i.name)
      return i.api;
  return std::nullopt;
}

std::string describeDtype(cuts_dtype dtype) {
  if (const DtypeInfo *i = findDtype(dtype))
    return std::string(i->name) + " (" + i->label + ")";
  return std::to_string(int(dtype)) + " (not a cuts_dtype)";
}

uint64_t bytesAtBatch(const Tensor &t, int64_t batch) {
  if (t.batchAxis < 0 || batch <= 0 || t.shape.empty() || t.shape[0] == 0)
    return t.bytes();
  return t.bytes() / uint64_t(t.shape[0]) * uint64_t(batch);
}

std::optional<int64_t> bindingBatch(const Manifest &man, const cuts_binding *b,
                                    int n, int64_t maxBatch,
                                    std::string &error) {
  if (man.batch == 0)
    return 0;
  int64_t batch = 0;
  std::string first;
  for (int i = 0; b && i < n; ++i) {
    const cuts_binding &x = b[i];
    for (int t : man.inputs) {
      const Tensor &in = man.tensors[t];
      if (!x.name || in.name != x.name || in.batchAxis < 0 || x.rank < 1 ||
          !x.shape)
        continue;
      if (batch > 0 && x.shape[0] != batch) {
        error = "input \"" + in.name + "\" has batch " +
                std::to_string(x.shape[0]) + " but \"" + first + "\" has " +
                std::to_string(batch) + " (axis 0)";
        return std::nullopt;
      }
      batch = x.shape[0], first = in.name;
    }
  }
  if (batch == 0 && first.empty())
    return man.batch; // no batched input bound: checkBindings says why
  if (batch < 1 || batch > maxBatch) {
    error = "input \"" + first + "\" has batch " + std::to_string(batch) +
            "; the model serves batches 1 to " + std::to_string(maxBatch) +
            " (axis 0)";
    return std::nullopt;
  }
  return batch;
}

std::vector<int64_t> splitBatch(int64_t batch,
                                const std::vector<double> &shares) {
  double total = 0;
  for (double w : shares)
    total += w;
  std::vector<int64_t> rows(shares.size(), 0);
  std::vector<std::pair<double, size_t>> rest;
  int64_t given = 0;
  for (size_t d = 0; d < shares.size(); ++d) {
    const double exact = double(batch) * shares[d] / total;
    rows[d] = int64_t(std::floor(exact));
    given += rows[d];
    rest.emplace_back(exact - double(rows[d]), d);
  }
  // Largest fraction first; ties to the earlier device.
  std::stable_sort(rest.begin(), rest.end(), [](const auto &a, const auto &b) {
    return a.first > b.first;
  });
  for (size_t i = 0; given < batch; ++i, ++given)
    ++rows[rest[i % rest.size()].second];
  return rows;
}

size_t choosePlan(const std::vector<int64_t> &batches, int64_t batch) {
  for (size_t p = 0; p < batches.size(); ++p)
    if (batch > 0 && batches[p] >= batch)
      return p;
  return batches.empty() ? 0 : batches.size() - 1;
}

bool runsBatch(const Manifest &plan, int64_t batch, std::string &error) {
  if (plan.mixesRows.empty() || batch <= 0 || batch == plan.batch)
    return true;
  error = "batch " + std::to_string(batch) + " would be padded to profile " +
          std::to_string(plan.batch) + ", but " + plan.mixesRows +
          ", so padding would change every row's results: run a profile's "
          "own batch";
  return false;
}

bool checkBindings(const Manifest &man, const cuts_binding *b, int n,
                   bool inputs, std::vector<void *> &data, std::string &error,
                   int64_t batch) {
  const std::vector<int> &ids = inputs ? man.inputs : man.outputs;
  const char *what = inputs ? "input" : "output";
  auto failWith = [&](std::string msg) {
    error = std::move(msg);
    return false;
  };
  std::string names;
  for (int t : ids)
    names += (names.empty() ? "\"" : ", \"") + man.tensors[t].name + "\"";
  if (n < 0 || (n > 0 && !b))
    return failWith(std::string("the ") + what +
                    " bindings are NULL or their count is negative");
  if (size_t(n) != ids.size())
    return failWith("the model has " + std::to_string(ids.size()) + " " + what +
                    "s (" + names + "), " + std::to_string(n) + " were bound");
  data.assign(ids.size(), nullptr);
  std::vector<bool> seen(ids.size(), false);
  for (int i = 0; i < n; ++i) {
    const cuts_binding &x = b[i];
    if (!x.name)
      return failWith(std::string(what) + " binding " + std::to_string(i) +
                      " has no name");
    size_t j = 0;
    while (j < ids.size() && man.tensors[ids[j]].name != x.name)
      ++j;
    if (j == ids.size())
      return failWith(std::string("the model has no ") + what + " named \"" +
                      x.name + "\" (its " + what + "s: " + names + ")");
    const Tensor &t = man.tensors[ids[j]];
    std::string label = std::string(what) + " \"" + t.name + "\"";
    if (seen[j])
      return failWith(label + " is bound twice");
    seen[j] = true;
    auto want = apiDtype(t.dtype);
    if (!want || x.dtype != *want)
      return failWith(label + ": dtype " + describeDtype(x.dtype) +
                      " given, the model's is " +
                      (want ? describeDtype(*want) : t.dtype));
    std::vector<int64_t> shape = t.shape;
    if (t.batchAxis >= 0 && batch > 0)
      shape[size_t(t.batchAxis)] = batch;
    std::string expected = shapeString(shape.data(), int(shape.size()));
    if (x.rank < 0 || (x.rank > 0 && !x.shape))
      return failWith(label + ": rank " + std::to_string(x.rank) +
                      " with no shape given, expected shape " + expected);
    if (size_t(x.rank) != shape.size() ||
        !std::equal(shape.begin(), shape.end(), x.shape))
      return failWith(label + ": expected shape " + expected + ", given " +
                      shapeString(x.shape, x.rank));
    if (!x.data && bytesAtBatch(t, batch) > 0)
      return failWith(label + ": data is NULL");
    data[j] = x.data;
  }
  return true;
}

bool checkAlignment(const Manifest &man, const std::vector<void *> &data,
                    bool inputs, std::string &error) {
  const std::vector<int> &ids = inputs ? man.inputs : man.outputs;
  for (size_t i = 0; i < data.size() && i < ids.size(); ++i) {
    uintptr_t p = reinterpret_cast<uintptr_t>(data[i]);
    if (man.tensors[ids[i]].bytes() == 0 || p % kBindingAlign == 0)
      continue;
    char address[32];
    std::snprintf(address, sizeof address, "%#llx",
                  static_cast<unsigned long long>(p));
    error = std::string(inputs ? "input" : "output") + " \"" +
            man.tensors[ids[i]].name + "\": data " + address + " is not " +
            std::to_string(kBindingAlign) +
            "-byte aligned (device buffers must be; cudaMalloc's are)";
    return false;
  }
  return true;
}

std::vector<uint8_t> fillElement(const std::string &dtype) {
  std::vector<uint8_t> one(size_t(dtypeBytes(dtype)), 0);
  auto put = [&](auto v) { std::memcpy(one.data(), &v, sizeof v); };
  if (dtype == "float32")
    put(0.5f);
  else if (dtype == "float64")
    put(0.5);
  else if (dtype == "float16")
    put(uint16_t(0x3800)); // 0.5
  else if (dtype == "bfloat16")
    put(uint16_t(0x3F00)); // 0.5
  else if (dtype == "bool")
    one[0] = 1;
  return one; // integers: 0
}

} // namespace cuts::rt

//===- The C API ----------------------------------------------------------===//

size_t cuts_dtype_size(cuts_dtype dtype) {
  const DtypeInfo *i = findDtype(dtype);
  return i ? size_t(dtypeBytes(i->name)) : 0;
}

const char *cuts_dtype_name(cuts_dtype dtype) {
  const DtypeInfo *i = findDtype(dtype);
  return i ? i->name : "unknown";
}
