//===- TensorCore.h - the tensor-core mode of cuts-kernel-check -*- C++ -*-===//
#ifndef CUTS_TOOLS_KERNEL_CHECK_TENSORCORE_H
#define CUTS_TOOLS_KERNEL_CHECK_TENSORCORE_H

#include "perfmodel/Arch.h"

#include <string>

namespace cuts::kernel_check {

/// Checks and times tensor-core GEMMs in `precision` (fp16 or bf16) against
/// cublasGemmEx; 0 when every kernel's result was right.
int checkTensorCore(const GpuArch &arch, const std::string &precision,
                    const std::string &jsonPath);

} // namespace cuts::kernel_check

#endif // CUTS_TOOLS_KERNEL_CHECK_TENSORCORE_H
