//===- ConstEval.h - evaluate cuts ops on constant tensors ------*- C++ -*-===//
//
// The folders of the cuts dialect evaluate ops whose operands are constants
// (shape subgraphs, weight transposes, BatchNormalization folding). A
// HostTensor holds such a constant on the host: floats as double and integers
// and booleans as int64, which is exact for every element type we import.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_DIALECT_CUTS_CONSTEVAL_H
#define CUTS_DIALECT_CUTS_CONSTEVAL_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace cuts {

struct HostTensor {
  mlir::RankedTensorType type;
  std::vector<double> f;  // float element types
  std::vector<int64_t> i; // integer and i1 element types

  HostTensor() = default;
  explicit HostTensor(mlir::RankedTensorType type);

  /// Read per element by folders (a matmul's inner loop): kept, not asked
  /// of the type each time.
  bool isFloat() const { return floating; }
  int64_t numel() const { return type.getNumElements(); }
  llvm::ArrayRef<int64_t> shape() const { return type.getShape(); }
  double getF(int64_t k) const { return isFloat() ? f[k] : double(i[k]); }
  int64_t getI(int64_t k) const { return isFloat() ? int64_t(f[k]) : i[k]; }
  /// Stores v, rounded to the element type (float precision or integer width).
  void set(int64_t k, double v);
  void setI(int64_t k, int64_t v);

private:
  bool floating = false;
};

/// Largest tensor (in elements) a folder materialises; larger results stay
/// as ops so that folding never blows up memory or compile time.
constexpr int64_t kMaxFoldElements = int64_t(1) << 26;
/// Folded results up to this many elements are printed inline (`dense<...>`);
/// larger ones become resource blobs like imported weights.
constexpr int64_t kMaxInlineElements = 16;

/// Reads a DenseElementsAttr or DenseResourceElementsAttr.
std::optional<HostTensor> toHost(mlir::Attribute attr);
/// Builds the attribute for t (inline when small, else a resource blob named
/// blobName).
mlir::ElementsAttr toAttr(const HostTensor &t,
                          llvm::StringRef blobName = "folded");

/// The bits of the fp16 or bf16 value of type t nearest to v (ties to even,
/// overflow to infinity): what toAttr stores; nullopt for other types.
std::optional<uint16_t> halfBits(mlir::Type t, float v);
/// A resource attribute of `type` holding `raw` (its little-endian
/// elements), as toAttr makes for large tensors.
mlir::ElementsAttr rawAttr(mlir::RankedTensorType type,
                           llvm::ArrayRef<char> raw, llvm::StringRef blobName);

/// Row-major strides of a shape.
llvm::SmallVector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape);

/// Numpy broadcast of two shapes; nullopt if they do not broadcast.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Where axis `axis` of `from` lands in `to` (a reshape of it) as the major
/// part of an axis whose size is a multiple of `multiple`: the axis after
/// the same leading elements, so that `multiple` equal blocks of the one
/// are the blocks of the other; nullopt where there is none.
std::optional<int64_t> majorAxis(llvm::ArrayRef<int64_t> from,
                                 llvm::ArrayRef<int64_t> to, int64_t axis,
                                 int64_t multiple);

/// Offset into a tensor of shape `from` (right-aligned and broadcast to `to`)
/// of the element at flat index k of `to`.
int64_t broadcastOffset(int64_t k, llvm::ArrayRef<int64_t> to,
                        llvm::ArrayRef<int64_t> from);

/// Rounds v to what an element of type t can hold (float precision, integer
/// wrap-around, i1 to 0/1).
double roundToType(mlir::Type t, double v);

} // namespace cuts

#endif // CUTS_DIALECT_CUTS_CONSTEVAL_H
