// When Matmul::gemm gives up the fused GELU epilogue. Plain C++ (no CUDA types), so the rule is
// unit-tested on machines without a GPU (tests/model/cuda_gemm_fallback_test.cpp).
//
// A GEMM with the GELU epilogue (C = gelu(A@B + bias), the pre-GELU values kept in an aux
// buffer) has an unfused twin that always works: the bias epilogue into the aux buffer, then
// the GELU kernel. So any fault on the fused path falls back to it, whichever step failed:
// cuBLASLt's layout rule for the aux buffer, a descriptor call, the heuristic (an error, or no
// algorithm), or the launch itself. A plain or bias-only GEMM has nothing to fall back to: its
// fault is an error.
#pragma once

namespace sixnd::cuda {

enum class GemmFault { none, aux_layout, descriptor, no_algorithm, launch };
enum class GemmNext { go_on, unfused, fail };

// cuBLASLt's rule for the GELU aux buffer (cublasLt.h, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD): its
// leading dimension, in elements, divisible by 8 and at least the number of rows of D (in
// cuBLASLt's column-major view, D's rows are the row-major output's columns).
inline bool gelu_aux_layout_ok(long long aux_ld, long long d_rows) { return aux_ld % 8 == 0 && aux_ld >= d_rows; }

inline GemmNext gemm_next(bool fused_gelu, GemmFault fault) {
    if (fault == GemmFault::none) return GemmNext::go_on;
    return fused_gelu ? GemmNext::unfused : GemmNext::fail;
}

inline const char* gemm_fault_name(GemmFault f) {
    switch (f) {
        case GemmFault::none: return "none";
        case GemmFault::aux_layout: return "GELU aux leading dimension not a multiple of 8";
        case GemmFault::descriptor: return "descriptor setup failed";
        case GemmFault::no_algorithm: return "no algorithm";
        case GemmFault::launch: return "launch failed";
    }
    return "?";
}

}  // namespace sixnd::cuda
