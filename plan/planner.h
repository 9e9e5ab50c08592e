// `sixnd plan`: a budget (compute, or devices x days x MFU on a device), a model (parameter
// count or a shape) and a token count — any consistent subset — resolved into C, N and D, then
// time, cost, memory per device (each pipeline stage's), communication, pipeline bubble,
// interruptions, checkpoint interval and serving. Inconsistent or incomplete inputs are one Error naming the flags.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plan/devices.h"
#include "plan/memory.h"
#include "plan/report.h"

namespace sixnd::plan {

// A model shape (from a preset or --n-layer/--n-embd/...), built by the caller from model/.
struct ModelInfo {
    std::string name;
    int n_layer = 0, n_head = 0, n_embd = 0, vocab = 0, padded_vocab = 0, max_seq_len = 0;
    double params = 0;         // every parameter
    double matmul_params = 0;  // the N of 6N: all but the position embeddings, the tied wte once
    LayoutShape layout;        // padded units at the planned rank count
    ActivationShape knobs;     // n_kv_head, hidden, swiglu, rmsnorm, qk_norm (the rest is set from above)
    // [rows, cols] of the matrices a bf16 matmul multiplies as weights: one block's (every block
    // has the same) and the LM head.
    std::vector<std::pair<int, int>> block_matrices;
    std::pair<int, int> head_matrix{0, 0};
    // Under a pipeline, padded as the layout pads units: the first stage's embeddings unit (wte,
    // and wpe with learned positions, without an untied head) and the last stage's LM head
    // [Vp, C] as a unit of its own (untied, lm_head.weight; tied, a copy of wte whose gradient
    // the two stages would sum).
    double first_stage_unit = 0, head_unit = 0;
    bool tied_head = true;  // the LM head is wte (under a pipeline the two ends sum its gradient)
    // Muon's matrices unit by unit (Muon::matrices_by_unit), for its Newton-Schulz buffer per rank.
    std::vector<MuonUnit> muon_units;
    ActivationShape activation_shape(bool flash) const {
        ActivationShape s = knobs;
        s.n_layer = n_layer;
        s.n_head = n_head;
        s.n_embd = n_embd;
        s.padded_vocab = padded_vocab;
        s.flash = flash;
        return s;
    }
};

// A CPU without BF16 dot products runs bf16 matmuls on the packed GEMM, which keeps packed bf16
// panels of each Linear weight and of the LM head in each of its two roles
// (model/cpu/weight_copies.h): 2 bytes per element and role, the role's N (rows as W^T, columns
// as W) padded to the panel width the kernels were built with. The copies are kept per weight
// address: under ZeRO-3 the blocks' weights are gathered into kZero3UnitSlots reused slots
// (core/zero_slots.h), so a rank keeps one block's copies per slot that ever holds a block (all
// of them with as many blocks; with one block, the final layernorm takes the other slot), and
// the head's in the embeddings slot.
double cpu_weight_copy_bytes(const ModelInfo& m, int zero_stage, int panel_width);
// A pipeline stage's: `layers` blocks, and the head's where the stage holds it.
double cpu_weight_copy_bytes(const ModelInfo& m, int zero_stage, int panel_width, int layers, bool head);

struct PlanInputs {
    double flops = 0;                       // --flops
    double devices = 0, days = 0, mfu = 0;  // --devices, --days, --mfu
    std::optional<DeviceSpec> device;       // --device
    double params = 0;                      // --params
    std::optional<ModelInfo> model;         // --model / shape flags
    double tokens = 0, tokens_per_param = 0;
    int batch = 0, seq_len = 0;             // micro-batch per rank and sequence length
    int grad_accum = 1;
    int ranks = 0;                          // data-parallel ranks (0: data_parallel_ranks decides)
    int zero_stage = 0;
    Recompute recompute = Recompute::none;
    bool flash = true;
    int dtype_bytes = 2;
    bool master_weights = true;
    bool muon = false;                      // --optimizer muon (needs a model)
    int weight_copy_panel = 0;              // this CPU's packed-GEMM panel width when bf16 keeps weight copies, else 0
    int pipeline_stages = 1, micro_batches = 0;
    bool gpipe = false;                     // --pipeline-schedule gpipe: all M micro-batches in flight, else 1F1B
    double price_per_device_hour = 0;
    double serve_tokens = 0;
    int serve_batch = 1;
    double checkpoint_write_s = 0;
    double write_bw = 2e9;                  // bytes/s per device, when the write time is estimated
};

// The data-parallel ranks: --ranks, else what --devices leaves per pipeline stage, else 1. sixnd
// has no tensor parallelism, so the devices are ranks x pipeline stages; an Error names the flag
// when they are not.
int data_parallel_ranks(const PlanInputs& in);

Report make_plan(const PlanInputs& in);

}  // namespace sixnd::plan
