#include "core/dtype.h"

#include "core/error.h"

namespace sixnd {

DType parse_dtype(const std::string& s) {
    if (s == "fp32") return DType::f32;
    if (s == "bf16") return DType::bf16;
    throw Error("--dtype", "unknown dtype '" + s + "' (expected fp32 or bf16)");
}

}  // namespace sixnd
