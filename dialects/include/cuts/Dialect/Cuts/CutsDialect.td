//===- CutsDialect.td - the cuts graph dialect -------------*- tablegen -*-===//
//
// The `cuts` dialect is the graph the whole compiler works on: one op per ONNX
// operator we cover, with ONNX semantics, static shapes, and every attribute
// explicit and normalised (no auto_pad, no negative axes, no shape-carrying
// operands), whatever the opset of the imported model.
//
//===----------------------------------------------------------------------===//

#ifndef CUTS_DIALECT_TD
#define CUTS_DIALECT_TD

include "mlir/IR/OpBase.td"

def Cuts_Dialect : Dialect {
  let name = "cuts";
  let cppNamespace = "::cuts";
  let summary = "ONNX-level graph dialect of the cuts compiler";
  let description = [{
    Ops carry the semantics of the ONNX operator of the same name (mnemonic =
    ONNX op type in snake_case). Inputs that decide a result's shape in ONNX
    (Reshape's shape, Slice's starts, ReduceMean's axes, ...) are attributes
    here, resolved at import; results are always statically shaped tensors.
  }];
  let hasConstantMaterializer = 1;
  // Attributes stay in the op's dictionary so that type inference can be run
  // from an OperationState before an op exists (the importer reports inference
  // failures as errors instead of aborting in a builder).
  let usePropertiesForAttributes = 0;
}

#endif // CUTS_DIALECT_TD
