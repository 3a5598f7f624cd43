//===- OnnxImporter.h - ONNX ModelProto to the cuts dialect -----*- C++ -*-===//
//
// The importer turns an ONNX model into a `func.func @main` of cuts ops with
// static shapes. Weights become resource blobs; inputs that decide shapes in
// ONNX (Reshape's shape, Slice's starts, ...) are evaluated at import and
// become attributes, so the shape-computing subgraphs of exported models are
// left dead for the clean-up passes.
//
//===----------------------------------------------------------------------===//
#ifndef CUTS_COMPILER_ONNX_ONNXIMPORTER_H
#define CUTS_COMPILER_ONNX_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace cuts {

struct ImportOptions {
  /// Shapes for graph inputs (`--input-shape name=1x3x224x224`); they fix
  /// symbolic dimensions and must agree with the model's static ones.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// A batch profile's batch (`--batch`): axis 0 of every input whose axis
  /// 0 is symbolic, or whose shape --input-shape gives, is set to it. 0:
  /// none.
  int64_t batch = 0;
  /// Serialised onnx.TensorProto values for graph inputs. Used only where an
  /// input decides a shape (a Reshape's shape fed by a graph input, as in the
  /// ONNX node tests): the value is then a compile-time constant.
  std::map<std::string, std::string> shapeInputValues;
};

/// Imports an ONNX model file. External data files are looked up next to
/// it. On failure returns null and sets `error` to a one-line message that
/// names the node, op type, tensor or attribute at fault.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxFile(mlir::MLIRContext &ctx,
                                                 llvm::StringRef path,
                                                 const ImportOptions &options,
                                                 std::string &error);

/// Imports a serialised ModelProto; `modelDir` is where external data lives
/// (empty: external data is an error).
mlir::OwningOpRef<mlir::ModuleOp> importOnnxBytes(mlir::MLIRContext &ctx,
                                                  llvm::StringRef bytes,
                                                  llvm::StringRef modelDir,
                                                  const ImportOptions &options,
                                                  std::string &error);

/// The ONNX op types the importer covers, sorted.
std::vector<std::string> supportedOnnxOps();

/// Opsets of the default ONNX domain the importer accepts.
constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 28;

} // namespace cuts

#endif // CUTS_COMPILER_ONNX_ONNXIMPORTER_H
