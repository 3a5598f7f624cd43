//===- Dfg.h - the data-flow graph of a thread block ------------*- C++ -*-===//
//
// DeepCuts generates kernels from data-flow graphs (thesis §3.3): a baseline
// DFG describes one thread block's computation as scalar nodes (shared and
// global loads and stores, register values, arithmetic, special functions,
// barriers); the DFG of one output is duplicated for every output of the
// block and loads of the same address are merged (Fig. 3.3); fused ops are
// concatenated (register level: the intermediate stays a value; shared
// level: a store, a barrier and loads); finally the last stores are split
// into per-thread chunks and what a chunk reaches backwards is the DFG of a
// thread (§3.3.3), which the emitter prints in reverse post-order.
//
// Addresses are concrete positions inside the block (thread 0's chunk after
// extraction). Each buffer dimension says which output dimension it follows
// and with which scale, so the emitter turns thread 0's positions into every
// thread's by adding `thread coordinate x thread extent x scale`.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_CODEGEN_DFG_DFG_H
#define CUTS_CODEGEN_DFG_DFG_H

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace cuts::dfg {

/// The output dimensions a block and a thread tile (perfmodel TileParams).
enum OutDim : int { DimN = 0, DimK = 1, DimH = 2, DimW = 3, NoDim = -1 };

enum class Space { Global, Shared };

/// The element type of a buffer and of a node's value. Indices (ONNX int64)
/// and masks (bool) flow through the same DFGs as the fp32 data they select.
/// Value types. F16 and BF16 are storage types: 16-bit bit patterns in
/// memory that kernels compute on as fp32 (TensorCore.h's conversions).
enum class Type { F32, I64, I32, Bool, F16, BF16 };

/// The type a value loaded from a buffer of type t has (and a value stored
/// into it is converted from).
inline Type valueType(Type t) {
  return t == Type::F16 || t == Type::BF16 ? Type::F32 : t;
}

/// How one buffer dimension moves from thread to thread: position =
/// thread-0 position + coordinate(outDim) x threadExtent(outDim) x scale.
/// For global buffers the block's base moves the same way with the block
/// extent.
struct DimMap {
  int outDim = NoDim;
  int64_t scale = 1;
  /// The dimension also moves with the body's channel loop (see
  /// codegen::Kernel::bodyStep): position += the loop's channel.
  bool inner = false;
  /// The dimension also moves with the body's filter-row loop (see
  /// codegen::Kernel::tapStep): position += the loop's row x tap.
  int64_t tap = 0;
  /// A digit of the output dimension, which merges several tensor axes (a
  /// batched matmul's batch axes): position = (position / div) % mod, mod 0
  /// taking no remainder.
  int64_t div = 1, mod = 0;
  bool digit() const { return div != 1 || mod != 0; }
  /// Whether a body loop (channels or filter rows) moves the position.
  bool loops() const { return inner || tap != 0; }
  bool operator==(const DimMap &o) const {
    return outDim == o.outDim && scale == o.scale && inner == o.inner &&
           tap == o.tap && div == o.div && mod == o.mod;
  }
  bool operator!=(const DimMap &o) const { return !(*this == o); }
};

struct Buffer {
  std::string name;
  Space space = Space::Shared;
  std::vector<int64_t> extents; // logical extents
  std::vector<int64_t> strides; // element strides of the layout
  std::vector<DimMap> map;      // per dimension
  Type type = Type::F32;
  /// Shared: loads check the extents and read 0 outside, as global loads
  /// always do (rows over lanes that overhang a row's end).
  bool guarded = false;
};

enum class Op {
  Load,   // buffer[index]
  Store,  // buffer[index] = in[0]
  Value,  // a register carried in (e.g. an accumulator from the last
          // iteration); `name` identifies it
  Result, // a register carried out: in[0] becomes `name`
  Const,  // value
  Add,
  Sub,
  Mul,
  Div,
  Mod,  // the divisor's sign (Python's %); 0 by 0
  FMod, // the dividend's sign (C's fmod); 0 by 0
  Max,
  Min,
  Fma, // binary (Fma: in0 * in1 + in2)
  Pow, // in0 ^ in1
  Neg,
  Abs,
  Relu,
  Exp,
  Log,
  Sqrt,
  Erf,
  Tanh,
  Sigmoid,
  Recip, // unary
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Floor,
  Ceil,
  Round,     // halves to even
  Clip,      // clamp(in0, value, value2)
  LeakyRelu, // in0 < 0 ? value * in0 : in0
  HardSigmoid,
  HardSwish,
  Gelu,
  GeluTanh,
  Cast,  // in0 converted to the node's type
  Equal, // comparisons: bool
  Less,
  And, // logical, on bools
  Or,
  Xor,
  Not,
  Where,    // in0 ? in1 : in2
  Pick,     // Concat: in[i] loads part i of a global tensor concatenated
            // along buffer axis `value`; the value of the one part the
            // position falls in (0 in none). Only that part is read: the
            // emitter finds it by bisecting the offsets.
  LaneSum,  // in0 summed over the `value` lanes that share a row (a warp's
  LaneMax,  // shuffles; every lane gets the result)
  InBounds, // bool: whether in0, a Load, reads inside its buffer's extents
            // (a load outside reads 0; rows over lanes mask their overhang)
  Barrier,  // orders the shared-memory accesses before and after it
};

/// The type of op's value given its operands' types (Cast: `cast`).
Type resultType(Op op, const std::vector<Type> &in, Type cast = Type::F32);

struct Node {
  explicit Node(Op op, std::vector<int> in = {}) : op(op), in(std::move(in)) {}
  Op op;
  std::vector<int> in;
  int buffer = -1;            // Load / Store
  std::vector<int64_t> index; // Load / Store: thread-0 position
  /// Load: per buffer dimension, -1 or the node whose value is the position
  /// along it (a memory-based index function, thesis §3.4.2: ONNX Gather).
  /// A negative value counts from the end; one outside the extent reads 0.
  std::vector<int> indexFrom;
  Type type = Type::F32; // the value's type (never F16 / BF16: valueType)
  /// Cast: the type converted to; to F16 or BF16 the value stays fp32,
  /// rounded to the 16-bit type.
  Type to = Type::F32;
  double value = 0, value2 = 0;
  std::string name;         // Value / Result
  std::vector<int64_t> out; // Result / Store: the block output position
};

class Graph {
public:
  int addBuffer(Buffer b);
  const Buffer &buffer(int id) const { return buffers[id]; }
  const std::vector<Buffer> &allBuffers() const { return buffers; }
  void renameBuffer(int id, std::string name) {
    buffers[id].name = std::move(name);
  }
  /// A buffer's element type, as long as its loads' value type stays
  /// (fp32 <-> fp16 / bf16: storage only).
  void setBufferType(int id, Type t) {
    if (valueType(t) == valueType(buffers[id].type))
      buffers[id].type = t;
  }

  /// Adds a node; loads without predecessors of the same buffer and index
  /// are merged (thesis Fig. 3.3), so duplicating an output's DFG over the
  /// block shares the loads the outputs have in common.
  int add(Node n);
  int load(int buffer, std::vector<int64_t> index,
           std::vector<int> indexFrom = {});
  /// An op node; its type follows from its operands' (resultType), `cast`
  /// is the target of a Cast.
  int op(Op op, std::vector<int> in, double value = 0, double value2 = 0,
         Type cast = Type::F32);
  int constant(double v, Type type = Type::F32);

  const Node &node(int id) const { return nodes[id]; }
  int size() const { return int(nodes.size()); }

  /// The nodes `roots` reach backwards, in reverse post-order of the
  /// reversed edges (every node after its operands): §3.3.3's extraction
  /// and §3.4.1's emission order in one.
  std::vector<int> reachedFrom(const std::vector<int> &roots) const;

  /// Gives buffer `id` a new layout `to`, its stores' indices mapped by
  /// `index` (an output stored transposed: codegen::storeDigits).
  void relayoutStores(
      int id, Buffer to,
      const std::function<std::vector<int64_t>(const std::vector<int64_t> &)>
          &index);

  /// Ids of the nodes with op `op` (e.g. the final stores to chunk).
  std::vector<int> nodesWith(Op op) const;

private:
  std::vector<Buffer> buffers;
  std::vector<Node> nodes;
  std::map<std::tuple<int, std::vector<int64_t>, std::vector<int>>, int> loads;
};

/// §3.3.3: the final nodes (stores or results) of thread 0's chunk — those
/// whose block output position lies in [0, threadExtent) on every output
/// dimension.
std::vector<int> threadZeroChunk(const Graph &g, const std::vector<int> &finals,
                                 const int64_t threadExtent[4]);

} // namespace cuts::dfg

#endif // CUTS_CODEGEN_DFG_DFG_H
