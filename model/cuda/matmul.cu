// matmul: row-major GEMMs through cuBLASLt, FP32 accumulation (CUBLAS_COMPUTE_32F: bf16
// inputs accumulate in FP32; fp32 inputs stay full FP32, no TF32, as the reference path).
// Row-major C[M,N] = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so B is cuBLASLt's
// first operand and A its second, m = N and n = M. Bias and GELU(+aux) are epilogues; the
// workspace is 32 MiB (what cuBLASLt asks for on Hopper); the heuristic runs once per
// distinct shape, types, epilogue and pointer alignment, and its algorithm is cached. The bias
// and aux pointers (and the aux leading dimension) are set before the heuristic runs; the
// alignment preferences cover A to D only, so callers hand in a 16-byte aligned bias
// (CudaOps::aligned_bias). A GELU-epilogue GEMM that fails at any step returns false and the
// caller takes the unfused path (gemm_fallback.h); any other GEMM's failure is an error.
#include <algorithm>
#include <cstdio>
#include <string>

#include "model/cuda/gemm_fallback.h"
#include "model/cuda/kernels.cuh"

namespace sixnd::cuda {

namespace {
constexpr size_t kWorkspaceBytes = 32u << 20;

int alignment(uintptr_t a) {
    int al = 256;
    while (al > 1 && (a % al) != 0) al /= 2;
    return al;
}

// The alignment promised for an operand: its pointer's, and in a batch also its stride's, since
// every later matrix starts that many bytes on (attention's scores, T x T, need not keep 16).
int operand_alignment(const void* p, int batch, long long stride, cudaDataType_t t) {
    const int al = alignment(reinterpret_cast<uintptr_t>(p));
    if (batch <= 1) return al;
    const uintptr_t stride_bytes = static_cast<uintptr_t>(stride) * (t == CUDA_R_32F ? 4 : 2);
    return std::min(al, alignment(stride_bytes));
}
}  // namespace

struct Matmul::Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    GemmFault fault = GemmFault::none;
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;  // the failing call's status, if any
    ~Plan() {
        if (desc) cublasLtMatmulDescDestroy(desc);
        if (a) cublasLtMatrixLayoutDestroy(a);
        if (b) cublasLtMatrixLayoutDestroy(b);
        if (c) cublasLtMatrixLayoutDestroy(c);
    }
};

Matmul::Matmul(MemoryBackend& mem, cudaStream_t stream)
    : stream_(stream), workspace_(&mem, kWorkspaceBytes, MemCategory::workspace) {
    SIXND_CUBLAS(cublasLtCreate(&handle_));
}

Matmul::~Matmul() {
    for (auto& kv : plans_) delete kv.second;
    if (handle_) cublasLtDestroy(handle_);
}

namespace {

// Records the first failing cuBLASLt status of a sequence of calls.
struct StatusTrail {
    cublasStatus_t first = CUBLAS_STATUS_SUCCESS;
    bool operator()(cublasStatus_t st) {
        if (st != CUBLAS_STATUS_SUCCESS && first == CUBLAS_STATUS_SUCCESS) first = st;
        return first == CUBLAS_STATUS_SUCCESS;
    }
};

void set_layout_batch(StatusTrail& ok, cublasLtMatrixLayout_t l, int batch, long long stride) {
    if (batch <= 1) return;
    ok(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch)));
    ok(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
}

// The bias and aux pointers of this call, set before the heuristic too.
void set_pointers(StatusTrail& ok, cublasLtMatmulDesc_t desc, const GemmArgs& g) {
    if (g.bias) ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
    if (g.gelu_aux)
        ok(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g.gelu_aux,
                                          sizeof(g.gelu_aux)));
}

}  // namespace

// Descriptors, layouts (bias and aux pointers and the aux leading dimension included), then the
// heuristic; the first fault is kept in the plan, so a shape that failed fails at once next time.
void Matmul::build_plan(Plan& plan, const GemmArgs& g, int al_a, int al_b, int al_c) {
    const bool gelu = g.gelu_aux != nullptr;
    const int64_t ld_aux = g.N;  // aux is [M,N] row-major: column-major N x M, ld N
    if (gelu && !gelu_aux_layout_ok(ld_aux, g.N)) {
        plan.fault = GemmFault::aux_layout;
        return;
    }
    StatusTrail ok;
    if (ok(cublasLtMatmulDescCreate(&plan.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F))) {
        // cuBLASLt's first operand is row-major B: stored [K,N] it is column-major N x K (op N).
        cublasOperation_t op1 = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
        cublasOperation_t op2 = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
        ok(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op1, sizeof(op1)));
        ok(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op2, sizeof(op2)));
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
        if (gelu) epi = g.bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
        else if (g.bias) epi = CUBLASLT_EPILOGUE_BIAS;
        ok(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
        if (g.bias) {
            cudaDataType_t bt = g.c_type;
            ok(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)));
        }
        if (gelu)
            ok(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld_aux, sizeof(ld_aux)));
        set_pointers(ok, plan.desc, g);
    }
    // Column-major shapes (rows, cols, ld) of the stored matrices.
    const int r1 = g.trans_b ? g.K : g.N, c1 = g.trans_b ? g.N : g.K;
    const int r2 = g.trans_a ? g.M : g.K, c2 = g.trans_a ? g.K : g.M;
    if (ok(cublasLtMatrixLayoutCreate(&plan.a, g.ab_type, r1, c1, g.ldb)))
        set_layout_batch(ok, plan.a, g.batch, g.stride_b);
    if (ok(cublasLtMatrixLayoutCreate(&plan.b, g.ab_type, r2, c2, g.lda)))
        set_layout_batch(ok, plan.b, g.batch, g.stride_a);
    if (ok(cublasLtMatrixLayoutCreate(&plan.c, g.c_type, g.N, g.M, g.ldc)))
        set_layout_batch(ok, plan.c, g.batch, g.stride_c);
    if (ok.first != CUBLAS_STATUS_SUCCESS) {
        plan.fault = GemmFault::descriptor;
        plan.status = ok.first;
        return;
    }

    cublasLtMatmulPreference_t pref;
    cublasStatus_t st = cublasLtMatmulPreferenceCreate(&pref);
    if (st == CUBLAS_STATUS_SUCCESS) {
        size_t ws = kWorkspaceBytes;
        uint32_t a1 = al_b, a2 = al_a, a3 = al_c;
        // A preference that did not take (an alignment cuBLASLt rejects) would let the heuristic
        // pick an algorithm for operands aligned better than these: the first failure stands.
        auto set = [&](cublasLtMatmulPreferenceAttributes_t attr, const void* v, size_t n) {
            if (st == CUBLAS_STATUS_SUCCESS) st = cublasLtMatmulPreferenceSetAttribute(pref, attr, v, n);
        };
        set(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
        set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &a1, sizeof(a1));
        set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &a2, sizeof(a2));
        set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &a3, sizeof(a3));
        set(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &a3, sizeof(a3));
        cublasLtMatmulHeuristicResult_t result{};
        int found = 0;
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasLtMatmulAlgoGetHeuristic(handle_, plan.desc, plan.a, plan.b, plan.c, plan.c, pref, 1, &result,
                                                &found);
        cublasLtMatmulPreferenceDestroy(pref);
        if (st == CUBLAS_STATUS_SUCCESS && found > 0) {
            plan.algo = result.algo;
            return;
        }
    }
    plan.fault = GemmFault::no_algorithm;
    plan.status = st;
}

bool Matmul::gemm(const GemmArgs& g) {
    const bool gelu = g.gelu_aux != nullptr;
    const int al_a = operand_alignment(g.A, g.batch, g.stride_a, g.ab_type);
    const int al_b = operand_alignment(g.B, g.batch, g.stride_b, g.ab_type);
    const int al_c = operand_alignment(g.C, g.batch, g.stride_c, g.c_type);
    const int al_bias = g.bias ? alignment(reinterpret_cast<uintptr_t>(g.bias)) : 0;
    const int al_aux = gelu ? alignment(reinterpret_cast<uintptr_t>(g.gelu_aux)) : 0;
    char key[512];
    std::snprintf(key, sizeof key, "%d,%d,%d,%d%d,%d,%lld,%d,%lld,%d,%lld,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d", g.M, g.N, g.K,
                  g.trans_a, g.trans_b, g.lda, g.stride_a, g.ldb, g.stride_b, g.ldc, g.stride_c, g.batch,
                  static_cast<int>(g.ab_type), static_cast<int>(g.c_type), g.bias != nullptr, gelu, al_a, al_b, al_c,
                  al_bias, al_aux);
    Plan*& plan = plans_[key];
    if (!plan) {
        plan = new Plan();
        build_plan(*plan, g, al_a, al_b, al_c);
    }
    if (plan->fault == GemmFault::none) {
        StatusTrail ok;
        set_pointers(ok, plan->desc, g);
        // A pointer that could not be set leaves the previous call's in the descriptor: no launch.
        if (ok.first == CUBLAS_STATUS_SUCCESS && ok(cublasLtMatmul(handle_, plan->desc, &g.alpha, g.B, plan->a, g.A, plan->b, &g.beta, g.C, plan->c, g.C,
                              plan->c, &plan->algo, workspace_.get(), kWorkspaceBytes, stream_)))
            return true;
        plan->fault = GemmFault::launch;
        plan->status = ok.first;
        cudaGetLastError();  // a launch error cuBLASLt saw must not surface at the fallback's next launch
    }
    const GemmFault fault = plan->fault;
    const cublasStatus_t status = plan->status;
    if (gemm_next(gelu, fault) == GemmNext::unfused) return false;
    // A plain GEMM with no way through: drop the plan, so a later call asks cuBLASLt again.
    delete plan;
    plans_.erase(key);
    std::string what = std::string(gemm_fault_name(fault)) + " for a " + std::to_string(g.M) + "x" +
                       std::to_string(g.N) + "x" + std::to_string(g.K) + " matmul (batch " + std::to_string(g.batch);
    if (status != CUBLAS_STATUS_SUCCESS) what += std::string(", ") + cublasLtGetStatusName(status);
    throw Error("cuBLASLt", what + ")");
}

}  // namespace sixnd::cuda
