// Storage types of activations, parameters and gradients. Everything that is accumulated
// (layernorm statistics, softmax, losses, master weights, Adam moments) is FP32 regardless.
#pragma once
#include <cstddef>
#include <string>
#include <type_traits>

namespace sixnd {

enum class DType { f32, bf16 };

// The DType of a storage type: float, or a 16-bit bf16 (the CPU's or the CUDA backend's).
template <typename X>
constexpr DType dtype_of() {
    return std::is_same<X, float>::value ? DType::f32 : DType::bf16;
}

inline size_t dtype_size(DType t) { return t == DType::f32 ? 4 : 2; }
inline const char* dtype_name(DType t) { return t == DType::f32 ? "fp32" : "bf16"; }
DType parse_dtype(const std::string& s);  // "fp32" | "bf16"; throws Error otherwise

}  // namespace sixnd
