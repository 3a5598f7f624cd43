//===- Cuda.cpp - CUDA / HIP source from a kernel's DFGs ------------------===//
#include "codegen/emit/Cuda.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

namespace cuts::codegen {

const char *typeName(dfg::Type t) {
  switch (t) {
  case dfg::Type::I64:
    return "long long";
  case dfg::Type::I32:
    return "int";
  case dfg::Type::Bool:
    return "bool";
  default:
    return "float";
  }
}

std::string paramType(const TensorArg &t) {
  return std::string(t.output ? "" : "const ") + typeName(t.type) +
         " *__restrict__";
}

namespace {

using dfg::Op;

const char *kDimLetter = "nkhw";

// Elements a shared buffer spans: the last element's offset plus one
// (padding included).
int64_t bufferFloats(const dfg::Buffer &b) {
  int64_t size = 1;
  for (size_t d = 0; d < b.extents.size(); ++d)
    size += (b.extents[d] - 1) * b.strides[d];
  return size;
}

int64_t sharedFloats(const Kernel &k) {
  int64_t n = 0;
  for (const dfg::Buffer &b : k.body.allBuffers())
    if (b.space == dfg::Space::Shared)
      n += bufferFloats(b);
  return n;
}

std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".eni") == std::string::npos)
    s += ".0";
  return s + "f";
}

std::string typedNum(double v, dfg::Type t) {
  switch (t) {
  case dfg::Type::I64:
    return std::to_string(int64_t(v)) + "LL";
  case dfg::Type::I32:
    return std::to_string(int64_t(v));
  case dfg::Type::Bool:
    return v != 0 ? "true" : "false";
  default:
    return num(v);
  }
}

class Emitter {
public:
  Emitter(const Kernel &k, Target t) : k(k), target(t) {
    const TileParams &p = k.params;
    threadExt[0] = p.Nt, threadExt[1] = p.Kt, threadExt[2] = p.Ht,
    threadExt[3] = p.Wt;
    blockExt[0] = p.Nb, blockExt[1] = p.Kb, blockExt[2] = p.Hb,
    blockExt[3] = p.Wb;
  }

  std::string run();

private:
  // Position along buffer dimension d of thread 0's index `i`, for this
  // thread (and block, for global buffers).
  std::string position(const dfg::Buffer &b, size_t d, int64_t i) const {
    const dfg::DimMap &m = b.map[d];
    std::string s;
    if (m.outDim != dfg::NoDim) {
      char l = kDimLetter[m.outDim];
      if (b.space == dfg::Space::Global)
        s += "base_" + std::string(1, l) + " * " + std::to_string(m.scale) +
             " + ";
      s += "t_" + std::string(1, l) + " * " +
           std::to_string(threadExt[m.outDim] * m.scale) + " + ";
    }
    return "(" + s + std::to_string(i) + ")";
  }

  std::string address(const dfg::Buffer &b,
                      const std::vector<int64_t> &idx) const {
    std::string s;
    for (size_t d = 0; d < idx.size(); ++d)
      s += (d ? " + " : "") + position(b, d, idx[d]) + " * " +
           std::to_string(b.strides[d]);
    return s;
  }

  // The guard of a global access: every position inside the tensor.
  std::string inside(const dfg::Buffer &b,
                     const std::vector<int64_t> &idx) const {
    // Positions only grow from thread 0's, so a lower bound is needed only
    // where thread 0's is negative (an input read shifted, as Concat's).
    std::string s;
    for (size_t d = 0; d < idx.size(); ++d) {
      std::string pos = position(b, d, idx[d]);
      s += (d ? " && " : "") + (idx[d] < 0 ? pos + " >= 0 && " : "") + pos +
           " < " + std::to_string(b.extents[d]);
    }
    return s;
  }

  std::string nameOf(const dfg::Graph &g, int id);
  // The position a gathered load reads along a dimension: the index value
  // with negative values counted from the end, declared once per value.
  std::string gatherPosition(const dfg::Graph &g, int value, int64_t extent,
                             const std::string &indent);
  void emitGraph(const dfg::Graph &g, const std::string &indent);
  enum class FetchMode { Direct, ToRegisters, FromRegisters };
  void emitFetch(const Fetch &f, const std::string &indent,
                 const std::string &loopBase, FetchMode mode, int fetchIndex);
  void declareTiles(const std::string &indent, const std::string &stage);

  const Kernel &k;
  Target target;
  int64_t threadExt[4], blockExt[4];
  std::ostringstream os;
  std::map<std::pair<const dfg::Graph *, int>, std::string> names;
  std::map<std::tuple<const dfg::Graph *, int, int64_t>, std::string> positions;
  int counter = 0;
};

std::string opName(Op op) {
  switch (op) {
  case Op::Add:
    return "sum";
  case Op::Sub:
    return "diff";
  case Op::Mul:
    return "prod";
  case Op::Div:
    return "quot";
  case Op::Max:
    return "maxv";
  case Op::Min:
    return "minv";
  case Op::Neg:
    return "neg";
  case Op::Relu:
    return "relu";
  case Op::Exp:
    return "ex";
  case Op::Log:
    return "lg";
  case Op::Sqrt:
    return "root";
  case Op::Erf:
    return "erfv";
  case Op::Tanh:
    return "th";
  case Op::Sigmoid:
    return "sig";
  case Op::Recip:
    return "rcp";
  case Op::Clip:
    return "clip";
  case Op::LeakyRelu:
    return "lrelu";
  case Op::HardSigmoid:
    return "hsig";
  case Op::HardSwish:
    return "hswish";
  case Op::Gelu:
  case Op::GeluTanh:
    return "gelu";
  case Op::Const:
    return "cst";
  case Op::Cast:
    return "cvt";
  case Op::Pow:
    return "pw";
  case Op::Equal:
  case Op::Less:
    return "cmp";
  case Op::And:
  case Op::Or:
  case Op::Xor:
  case Op::Not:
    return "pred";
  case Op::Where:
    return "sel";
  case Op::LaneSum:
    return "rowsum";
  case Op::LaneMax:
    return "rowmax";
  default:
    return "v";
  }
}

std::string Emitter::nameOf(const dfg::Graph &g, int id) {
  auto key = std::make_pair(&g, id);
  auto it = names.find(key);
  if (it != names.end())
    return it->second;
  const dfg::Node &n = g.node(id);
  std::string name;
  if (n.op == Op::Value || (n.op != Op::Load && !n.name.empty()))
    name = n.name; // a register accumulator, updated in place
  else if (n.op == Op::Load && !n.indexFrom.empty()) {
    name = g.buffer(n.buffer).name + "_at" + std::to_string(counter++);
  } else if (n.op == Op::Load) {
    name = g.buffer(n.buffer).name;
    for (int64_t i : n.index) // a negative position reads "m3"
      name += "_" + (i < 0 ? "m" + std::to_string(-i) : std::to_string(i));
    if (!n.in.empty()) // a re-read in a later pass
      name += "_again" + std::to_string(counter++);
  } else
    name = opName(n.op) + std::to_string(counter++);
  names[key] = name;
  return name;
}

std::string Emitter::gatherPosition(const dfg::Graph &g, int value,
                                    int64_t extent, const std::string &ind) {
  auto key = std::make_tuple(&g, value, extent);
  auto it = positions.find(key);
  if (it != positions.end())
    return it->second;
  std::string v = nameOf(g, value);
  std::string name = v + "_pos" + std::to_string(counter++);
  os << ind << "const long long " << name << " = " << v << " < 0 ? " << v
     << " + " << extent << "LL : (long long)" << v << ";\n";
  positions[key] = name;
  return name;
}

void Emitter::emitGraph(const dfg::Graph &g, const std::string &ind) {
  // §3.3.3: thread 0's chunk of the final stores and results, and what it
  // reaches; every thread runs the same code shifted by its coordinates.
  std::vector<int> finals = g.nodesWith(Op::Store);
  for (int r : g.nodesWith(Op::Result))
    finals.push_back(r);
  std::vector<int> chunk = dfg::threadZeroChunk(g, finals, threadExt);
  for (int id : g.reachedFrom(chunk)) {
    const dfg::Node &n = g.node(id);
    auto in = [&](int i) { return nameOf(g, n.in[i]); };
    std::string x = n.in.empty() ? "" : in(0);
    std::string expr;
    switch (n.op) {
    case Op::Value:
    case Op::Result:
      continue; // registers: named, declared before the loop
    case Op::Barrier:
      os << ind << "__syncthreads();\n";
      continue;
    case Op::Load: {
      const dfg::Buffer &b = g.buffer(n.buffer);
      std::string zero = typedNum(0, b.type);
      if (!n.indexFrom.empty()) {
        // A gathered load: dynamic positions are checked both ways (an
        // index outside the extent reads 0 rather than faulting).
        std::string addr, guard;
        for (size_t d = 0; d < n.index.size(); ++d) {
          std::string pos;
          if (n.indexFrom[d] >= 0) {
            pos = gatherPosition(g, n.indexFrom[d], b.extents[d], ind);
            guard += (guard.empty() ? "" : " && ") + std::string("(") + pos +
                     " >= 0 && " + pos + " < " + std::to_string(b.extents[d]) +
                     ")";
          } else {
            pos = position(b, d, n.index[d]);
            guard += (guard.empty() ? "" : " && ") + pos + " < " +
                     std::to_string(b.extents[d]);
          }
          addr += (d ? " + " : "") + pos + " * " + std::to_string(b.strides[d]);
        }
        os << ind << "const " << typeName(b.type) << " " << nameOf(g, id)
           << " = (" << guard << ") ? " << b.name << "[" << addr
           << "] : " << zero << ";\n";
        continue;
      }
      std::string a = b.name + "[" + address(b, n.index) + "]";
      if (b.space == dfg::Space::Global)
        a = "(" + inside(b, n.index) + ") ? " + a + " : " + zero;
      os << ind << "const " << typeName(b.type) << " " << nameOf(g, id) << " = "
         << a << ";\n";
      continue;
    }
    case Op::Store: {
      const dfg::Buffer &b = g.buffer(n.buffer);
      std::string a = b.name + "[" + address(b, n.index) + "] = " + x + ";";
      if (b.space == dfg::Space::Global)
        os << ind << "if (" << inside(b, n.index) << ")\n"
           << ind << "  " << a << "\n";
      else
        os << ind << a << "\n";
      continue;
    }
    case Op::Fma:
      expr = "fmaf(" + x + ", " + in(1) + ", " + in(2) + ")";
      break;
    case Op::Const:
      expr = typedNum(n.value, n.type);
      break;
    case Op::Add:
      expr = x + " + " + in(1);
      break;
    case Op::Sub:
      expr = x + " - " + in(1);
      break;
    case Op::Mul:
      expr = x + " * " + in(1);
      break;
    case Op::Div:
      expr = x + " / " + in(1);
      break;
    case Op::Max:
      expr = n.type == dfg::Type::F32
                 ? "fmaxf(" + x + ", " + in(1) + ")"
                 : x + " > " + in(1) + " ? " + x + " : " + in(1);
      break;
    case Op::Min:
      expr = n.type == dfg::Type::F32
                 ? "fminf(" + x + ", " + in(1) + ")"
                 : x + " < " + in(1) + " ? " + x + " : " + in(1);
      break;
    case Op::Cast:
      expr = std::string("static_cast<") + typeName(n.type) + ">(" + x + ")";
      break;
    case Op::Pow:
      expr = "powf(" + x + ", " + in(1) + ")";
      break;
    case Op::Equal:
      expr = x + " == " + in(1);
      break;
    case Op::Less:
      expr = x + " < " + in(1);
      break;
    case Op::And:
      expr = x + " && " + in(1);
      break;
    case Op::Or:
      expr = x + " || " + in(1);
      break;
    case Op::Xor:
      expr = x + " != " + in(1);
      break;
    case Op::Not:
      expr = "!" + x;
      break;
    case Op::Where:
      expr = x + " ? " + in(1) + " : " + in(2);
      break;
    case Op::LaneSum:
    case Op::LaneMax: {
      // Butterfly over the lanes sharing a row: after log2(G) exchanges
      // every lane holds the whole row's result.
      std::string r = nameOf(g, id);
      int64_t lanes = int64_t(n.value);
      std::string shfl =
          target == Target::Hip
              ? "__shfl_xor(" + r + ", o, " + std::to_string(lanes) + ")"
              : "__shfl_xor_sync(0xffffffffu, " + r + ", o, " +
                    std::to_string(lanes) + ")";
      os << ind << "float " << r << " = " << x << ";\n"
         << ind << "for (int o = " << lanes / 2 << "; o > 0; o >>= 1)\n"
         << ind << "  " << r << " = "
         << (n.op == Op::LaneSum ? r + " + " + shfl
                                 : "fmaxf(" + r + ", " + shfl + ")")
         << ";\n";
      continue;
    }
    case Op::Neg:
      expr = "-" + x;
      break;
    case Op::Relu:
      expr = "fmaxf(" + x + ", 0.0f)";
      break;
    case Op::Exp:
      expr = "expf(" + x + ")";
      break;
    case Op::Log:
      expr = "logf(" + x + ")";
      break;
    case Op::Sqrt:
      expr = "sqrtf(" + x + ")";
      break;
    case Op::Erf:
      expr = "erff(" + x + ")";
      break;
    case Op::Tanh:
      expr = "tanhf(" + x + ")";
      break;
    case Op::Sigmoid:
      expr = "1.0f / (1.0f + expf(-" + x + "))";
      break;
    case Op::Recip:
      expr = "1.0f / " + x;
      break;
    case Op::Clip:
      expr = "fminf(fmaxf(" + x + ", " + num(n.value) + "), " + num(n.value2) +
             ")";
      break;
    case Op::LeakyRelu:
      expr = x + " < 0.0f ? " + num(n.value) + " * " + x + " : " + x;
      break;
    case Op::HardSigmoid:
      expr = "fminf(fmaxf(" + num(n.value) + " * " + x + " + " + num(n.value2) +
             ", 0.0f), 1.0f)";
      break;
    case Op::HardSwish:
      expr = x + " * fminf(fmaxf(" + x + " / 6.0f + 0.5f, 0.0f), 1.0f)";
      break;
    case Op::Gelu:
      expr = "0.5f * " + x + " * (1.0f + erff(" + x + " * 0.70710678f))";
      break;
    case Op::GeluTanh:
      expr = "0.5f * " + x + " * (1.0f + tanhf(0.79788456f * (" + x +
             " + 0.044715f * " + x + " * " + x + " * " + x + ")))";
      break;
    }
    if (!n.name.empty()) // an accumulator updated in place
      os << ind << n.name << " = " << expr << ";\n";
    else
      os << ind << "const " << typeName(n.type) << " " << nameOf(g, id) << " = "
         << expr << ";\n";
  }
}

void Emitter::emitFetch(const Fetch &f, const std::string &ind,
                        const std::string &loopBase, FetchMode mode,
                        int fetchIndex) {
  const TensorArg &t = k.tensors[f.tensor];
  const dfg::Buffer &b = k.body.buffer(f.buffer);
  int64_t total = 1;
  for (const FetchDim &d : f.dims)
    total *= d.extent;
  int64_t threads = k.params.threads();
  int64_t rounds = (total + threads - 1) / threads;
  std::string reg = "staged" + std::to_string(fetchIndex);
  std::string in = ind + "  ";
  // Consecutive threads take consecutive elements of the last axis.
  if (mode == FetchMode::Direct) {
    os << ind << "for (int e = tid; e < " << total << "; e += kThreads) {\n";
  } else {
    if (mode == FetchMode::ToRegisters)
      os << ind << "float " << reg << "[" << rounds << "];\n";
    os << ind << "for (int round = 0; round < " << rounds << "; ++round) {\n"
       << in << "const int e = tid + round * kThreads;\n"
       << in << "if (e >= " << total << ")\n"
       << in << "  break;\n";
  }
  std::string rest = "e", guard, global, shared;
  for (size_t i = f.dims.size(); i-- > 0;) {
    const FetchDim &d = f.dims[i];
    std::string r = "r" + std::to_string(i);
    os << in << "const int " << r << " = " << rest << " % " << d.extent
       << ";\n";
    if (i > 0) {
      os << in << "const int q" << i << " = " << rest << " / " << d.extent
         << ";\n";
      rest = "q" + std::to_string(i);
    }
    std::string base = d.fromLoop ? loopBase
                       : d.outDim == dfg::NoDim
                           ? "0"
                           : "base_" + std::string(1, kDimLetter[d.outDim]) +
                                 " * " + std::to_string(d.scale);
    std::string g = "g" + std::to_string(i);
    if (mode != FetchMode::FromRegisters)
      os << in << "const long long " << g << " = " << base << " + " << d.offset
         << " + " << r << ";\n";
    guard = g + " >= 0 && " + g + " < " + std::to_string(d.globalExtent) +
            (guard.empty() ? "" : " && " + guard);
    global = g + " * " + std::to_string(d.globalStride) +
             (global.empty() ? "" : " + " + global);
    shared = r + " * " + std::to_string(d.sharedStride) +
             (shared.empty() ? "" : " + " + shared);
  }
  std::string inside = f.mask ? "1.0f" : t.name + "[" + global + "]";
  std::string outside = std::isinf(f.outside)
                            ? (f.outside < 0 ? "-__uint_as_float(0x7f800000u)"
                                             : "__uint_as_float(0x7f800000u)")
                            : num(f.outside);
  std::string value = "(" + guard + ") ? " + inside + " : " + outside;
  if (mode == FetchMode::Direct)
    os << in << b.name << "[" << shared << "] = " << value << ";\n";
  else if (mode == FetchMode::ToRegisters)
    os << in << reg << "[round] = " << value << ";\n";
  else
    os << in << b.name << "[" << shared << "] = " << reg << "[round];\n";
  os << ind << "}\n";
}

void Emitter::declareTiles(const std::string &ind, const std::string &stage) {
  int64_t offset = 0;
  for (const dfg::Buffer &b : k.body.allBuffers())
    if (b.space == dfg::Space::Shared) {
      os << ind << "float *const " << b.name << " = cuts_smem + " << stage
         << offset << ";\n";
      offset += bufferFloats(b);
    }
}

std::string Emitter::run() {
  const TileParams &p = k.params;
  int64_t threads = p.threads();
  int64_t cnt[4] = {p.Nb / p.Nt, p.Kb / p.Kt, p.Hb / p.Ht, p.Wb / p.Wt};
  int64_t dims[4] = {k.desc.N, k.desc.K, k.desc.H, k.desc.W};
  os << "// " << k.name << ": " << k.summary << "\n"
     << "// block " << p.Nb << "x" << p.Kb << "x" << p.Hb << "x" << p.Wb
     << ", thread " << p.Nt << "x" << p.Kt << "x" << p.Ht << "x" << p.Wt
     << " (N x K x H x W), C_input " << p.Cin << ", FORMAT_shared "
     << formatName(p.format) << ", " << threads << " threads";
  if (k.pul > 0)
    os << ", PUL " << k.pul;
  os << "\n// generated by cuts; do not edit\n";
  if (target == Target::Hip)
    os << "#include <hip/hip_runtime.h>\n";
  os << "\n"
     << "extern \"C\" __global__ void __launch_bounds__(" << threads << ")\n"
     << k.name << "(";
  for (size_t i = 0; i < k.tensors.size(); ++i)
    os << (i ? ", " : "") << paramType(k.tensors[i]) << " "
       << k.tensors[i].name;
  os << ") {\n"
     << "  constexpr int kThreads = " << threads << ";\n"
     << "  // Thread coordinates (W fastest, then H, K, N) and the block's\n"
     << "  // first output along each dimension.\n"
     << "  const int tid = threadIdx.x;\n"
     << "  const int t_w = tid % " << cnt[3] << ";\n"
     << "  const int t_h = (tid / " << cnt[3] << ") % " << cnt[2] << ";\n"
     << "  const int t_k = (tid / " << cnt[3] * cnt[2] << ") % " << cnt[1]
     << ";\n"
     << "  const int t_n = tid / " << cnt[3] * cnt[2] * cnt[1] << ";\n"
     << "  long long block = blockIdx.x;\n";
  for (int d = 3; d >= 0; --d) {
    int64_t tiles = (dims[d] + blockExt[d] - 1) / blockExt[d];
    os << "  const long long base_" << kDimLetter[d] << " = (block % " << tiles
       << ") * " << blockExt[d] << ";\n"
       << "  block /= " << tiles << ";\n";
  }
  os << "  (void)t_w; (void)t_h; (void)t_k; (void)t_n;\n";
  // Shared tiles live in dynamic shared memory: a block may use more than
  // the 48 KB static limit (up to the GPU's opt-in maximum). The
  // prefetching variant keeps two stages of them.
  if (sharedFloats(k) > 0)
    os << "  extern __shared__ float cuts_smem[];\n";
  if (!k.prefetch)
    declareTiles("  ", "");
  std::string init =
      std::isinf(k.accumulatorInit)
          ? (k.accumulatorInit < 0 ? "-__uint_as_float(0x7f800000u)"
                                   : "__uint_as_float(0x7f800000u)")
          : num(k.accumulatorInit);
  for (const std::string &a : k.accumulators)
    os << "  float " << a << " = " << init << ";\n";
  if (k.loopExtent > 0 && !k.prefetch) {
    os << "\n  for (long long c0 = 0; c0 < " << k.loopExtent
       << "; c0 += " << p.Cin << ") {\n"
       << "    // Fetch: global -> shared, all threads cooperating.\n";
    for (size_t i = 0; i < k.fetches.size(); ++i)
      emitFetch(k.fetches[i], "    ", "c0", FetchMode::Direct, int(i));
    os << "    __syncthreads();\n"
       << "    // Compute: this thread's sub-DFG in reverse post-order.\n";
    emitGraph(k.body, "    ");
    os << "    __syncthreads();\n  }\n\n";
  } else if (k.loopExtent > 0) {
    // §3.4.1's prefetching variant: the next slice's global loads are
    // issued before this slice's compute and land in the other stage after
    // it, so their latency hides behind the compute; one barrier a slice.
    std::string stage = std::to_string(sharedFloats(k));
    os << "\n  {\n    // Prologue: the first slice into stage 0.\n";
    declareTiles("    ", "");
    for (size_t i = 0; i < k.fetches.size(); ++i)
      emitFetch(k.fetches[i], "    ", "0LL", FetchMode::Direct, int(i));
    os << "  }\n  __syncthreads();\n"
       << "  for (long long c0 = 0; c0 < " << k.loopExtent
       << "; c0 += " << p.Cin << ") {\n"
       << "    const int stage = int(c0 / " << p.Cin << ") & 1;\n"
       << "    const bool more = c0 + " << p.Cin << " < " << k.loopExtent
       << ";\n"
       << "    // Prefetch the next slice into registers.\n";
    for (size_t i = 0; i < k.fetches.size(); ++i)
      emitFetch(k.fetches[i], "    ", "(c0 + " + std::to_string(p.Cin) + ")",
                FetchMode::ToRegisters, int(i));
    os << "    {\n";
    declareTiles("      ", "stage * " + stage + " + ");
    os << "      // Compute: this thread's sub-DFG in reverse post-order.\n";
    emitGraph(k.body, "      ");
    os << "    }\n    if (more) {\n";
    declareTiles("      ", "(stage ^ 1) * " + stage + " + ");
    for (size_t i = 0; i < k.fetches.size(); ++i)
      emitFetch(k.fetches[i], "      ", "", FetchMode::FromRegisters, int(i));
    os << "    }\n    __syncthreads();\n  }\n\n";
  }
  os << "  // Loop exit: epilogue and stores.\n";
  emitGraph(k.exit, "  ");
  os << "}\n";
  return os.str();
}

} // namespace

std::string emitSource(const Kernel &kernel, Target target) {
  return Emitter(kernel, target).run();
}

LaunchShape launchShape(const Kernel &k) {
  return {numBlocks(k.desc, k.params), k.params.threads(),
          sharedFloats(k) * int64_t(sizeof(float)) * (k.prefetch ? 2 : 1)};
}

} // namespace cuts::codegen
