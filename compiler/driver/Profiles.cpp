//===- Profiles.cpp - batch profiles merged into one artifact -------------===//
#include "compiler/driver/Profiles.h"

#include <cstring>
#include <map>

namespace cuts::driver {
namespace {

/// `size` bytes at `offset` of c's weights section: in its vector or one
/// of its spans (a constant is one or the other).
const uint8_t *weightData(const rt::ArtifactContents &c, uint64_t offset,
                          uint64_t size) {
  static const uint8_t none = 0;
  if (size == 0)
    return &none;
  if (offset + size <= c.weights.size())
    return c.weights.data() + offset;
  for (const rt::WeightSpan &w : c.weightSpans)
    if (offset >= w.offset && offset + size <= w.offset + w.size)
      return w.data + (offset - w.offset);
  return nullptr;
}

uint64_t fnv1a(const uint8_t *p, uint64_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < n; ++i)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

std::string shapeText(const std::vector<int64_t> &s) {
  std::string t;
  for (size_t d = 0; d < s.size(); ++d)
    t += (d ? "x" : "") + std::to_string(s[d]);
  return t.empty() ? "scalar" : t;
}

/// Marks the batched inputs and outputs of every profile (batchAxis 0),
/// checking that the rest of their description agrees.
bool markBatched(std::vector<rt::Manifest *> &ms,
                 const std::vector<int64_t> &batches, std::string &error) {
  const rt::Manifest &first = *ms[0];
  for (int pass = 0; pass < 2; ++pass) {
    const char *what = pass ? "output" : "input";
    for (size_t i = 0; i < (pass ? first.outputs : first.inputs).size(); ++i) {
      auto tensor = [&](size_t p) -> rt::Tensor & {
        rt::Manifest &m = *ms[p];
        return m.tensors[size_t((pass ? m.outputs : m.inputs)[i])];
      };
      bool batched = true;
      for (size_t p = 0; p < ms.size(); ++p)
        batched = batched && !tensor(p).shape.empty() &&
                  tensor(p).shape[0] == batches[p];
      for (size_t p = 1; p < ms.size(); ++p) {
        std::vector<int64_t> a = tensor(0).shape, b = tensor(p).shape;
        if (batched)
          a[0] = b[0] = 0;
        if (a != b || tensor(p).name != tensor(0).name ||
            tensor(p).dtype != tensor(0).dtype) {
          error = std::string(what) + " '" + tensor(0).name + "' is " +
                  shapeText(tensor(0).shape) + " at batch " +
                  std::to_string(batches[0]) + " but " +
                  shapeText(tensor(p).shape) + " at batch " +
                  std::to_string(batches[p]) +
                  ": only axis 0 may follow the batch";
          return false;
        }
      }
      for (size_t p = 0; batched && p < ms.size(); ++p)
        tensor(p).batchAxis = 0;
    }
  }
  for (size_t p = 0; p < ms.size(); ++p)
    ms[p]->batch = batches[p];
  return true;
}

} // namespace

namespace {

/// The weights in out's section by content hash: offset and bytes.
using WeightIndex = std::multimap<uint64_t, std::pair<uint64_t, uint64_t>>;

WeightIndex indexWeights(const rt::ArtifactContents &out) {
  WeightIndex stored;
  for (const rt::Tensor &t : out.manifest.tensors)
    if (t.kind == rt::TensorKind::Weight)
      if (const uint8_t *d = weightData(out, t.weightOffset, t.bytes()))
        stored.emplace(fnv1a(d, t.bytes()),
                       std::make_pair(t.weightOffset, t.bytes()));
  return stored;
}

/// c's weights into out's section (found in `stored` by content, or
/// appended after it as spans into c's own result and indexed), its
/// tensors' offsets updated.
bool shareWeights(rt::ArtifactContents &out, rt::ArtifactContents &c,
                  WeightIndex &stored, const std::string &label,
                  std::string &error) {
  for (rt::Tensor &t : c.manifest.tensors) {
    if (t.kind != rt::TensorKind::Weight)
      continue;
    const uint8_t *d = weightData(c, t.weightOffset, t.bytes());
    if (!d) {
      error = "weight '" + t.name + "' of " + label + " has no bytes";
      return false;
    }
    const uint64_t h = fnv1a(d, t.bytes());
    bool found = false;
    for (auto [it, end] = stored.equal_range(h); it != end && !found; ++it)
      if (it->second.second == t.bytes() &&
          std::memcmp(weightData(out, it->second.first, t.bytes()), d,
                      t.bytes()) == 0) {
        t.weightOffset = it->second.first;
        found = true;
      }
    if (found)
      continue;
    const uint64_t at = (out.weightBytes() + 255) / 256 * 256;
    out.weightSpans.push_back({at, d, t.bytes()});
    stored.emplace(h, std::make_pair(at, t.bytes()));
    t.weightOffset = at;
  }
  return true;
}

} // namespace

bool mergeProfiles(std::vector<CompileResult> &results,
                   const std::vector<int64_t> &batches,
                   rt::ArtifactContents &out, std::string &error) {
  std::vector<rt::Manifest *> ms;
  for (CompileResult &r : results)
    ms.push_back(&r.contents.manifest);
  if (!markBatched(ms, batches, error))
    return false;
  out = std::move(results[0].contents);
  WeightIndex stored = indexWeights(out);
  for (size_t p = 1; p < results.size(); ++p) {
    rt::ArtifactContents &c = results[p].contents;
    if (!shareWeights(out, c, stored, "batch " + std::to_string(batches[p]),
                      error))
      return false;
    out.profiles.push_back(
        {std::move(c.manifest), std::move(c.sources), std::move(c.cubins)});
  }
  return true;
}

bool mergeRanks(std::vector<CompileResult> &results, rt::ArtifactContents &out,
                std::string &error) {
  const int64_t ranks = int64_t(results.size());
  for (size_t r = 0; r < results.size(); ++r) {
    results[r].contents.manifest.ranks = ranks;
    results[r].contents.manifest.rank = int64_t(r);
  }
  out = std::move(results[0].contents);
  WeightIndex stored = indexWeights(out);
  for (size_t r = 1; r < results.size(); ++r) {
    rt::ArtifactContents &c = results[r].contents;
    if (!shareWeights(out, c, stored, "rank " + std::to_string(r), error))
      return false;
    out.rankPlans.push_back(
        {std::move(c.manifest), std::move(c.sources), std::move(c.cubins)});
  }
  return true;
}

} // namespace cuts::driver
