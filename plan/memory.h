// Memory per device and bytes sent per rank, predicted from the shape of the parameter layout.
//
// Model states follow sixnd's ZeRO engine: psi = padded elements of the flat layout, n ranks,
// e = bytes per parameter element (2 for bf16, 4 for fp32), optimizer state 4 bytes each:
//   stage 0: params e psi, grads e psi, master/m/v 4 psi each       (16 psi with bf16 + master)
//   stage 1: params e psi, grads e psi, master/m/v 4 psi / n        (4 + 12/n)
//   stage 2: params e psi, grads e psi / n + the unit buckets       (2 + 14/n)
//   stage 3: params e psi / n + three gathered unit slots, grads as stage 2   (16/n)
// (The figures in brackets are the ZeRO paper's; without master weights, or in fp32, which keeps
// none, the master's 4 drops out: fp32 is 4 + 4 + 8 bytes at stage 0.)
// The buckets and slots are sized by the embeddings unit and the largest other unit; stage
// >= 1 also holds one scratch slice (largest unit / n) as workspace. The layout itself (vocab
// padded to 128, units padded to 64 x n elements) is model/param_layout's: the caller passes
// its unit sizes in (from a run log header, or from a ParamLayout it built), so the padding
// rule lives in one place.
//
// Activations follow sixnd's kept tensors per token of a micro-batch (N = B T tokens, C
// channels, L layers, e bytes; statistics are float):
//   every layer      qkv 3C, attention output C, residual C, pre-GELU 4C         9 C e
//                    layernorm mean/rstd x2                                       16 bytes
//                    attention statistics: flash NH floats, naive NH T floats
//   kept unless recomputed: ln1 C, ln2 C, post-GELU 4C                            6 C e
//     none: in every layer; selective: one shared copy; full: one layer's tensors in all
//   the stream       x_0 .. x_L  (L + 1) C e;  projection, final LN C e each + 8 bytes stats
//   head             logits Vp e + loss 4 bytes;  token ids 8 bytes
// Backward workspace: dres C, dbuf C, dfch 4C, dqkv 3C = 9 C e per token.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "model/recompute.h"  // header-only

namespace sixnd::plan {

// The parameter layout as the ZeRO engine sees it: unit sizes in elements, padding included.
struct LayoutShape {
    // Embeddings first. Empty: only a parameter count is known, so no unit buffers are counted and
    // ZeRO-3 gathers every parameter in every forward and backward (the paper's 3 psi).
    std::vector<double> units;
    double total = 0;           // sum of units (or the parameter count)
    double unit0() const { return units.empty() ? 0 : units[0]; }
    double max_other() const;   // largest unit after the embeddings
    double max_unit() const;    // largest unit
};
LayoutShape layout_from_count(double params);

struct StateBytes {
    double params = 0, grads = 0, master = 0, adam_m = 0, adam_v = 0, workspace = 0;
    double total() const { return params + grads + master + adam_m + adam_v; }  // workspace apart
};
// e: bytes per element of parameters and gradients; master: FP32 master weights are kept
// (only meaningful when e < 4).
StateBytes model_state_bytes(const LayoutShape& layout, int zero_stage, int ranks, int e, bool master);

struct ActivationShape {
    int n_layer = 0, n_head = 0, n_embd = 0, padded_vocab = 0;
    bool flash = true;
    // The architecture knobs that change what a layer keeps (defaults: GPT-2's).
    int n_kv_head = 0;  // 0: n_head
    int hidden = 0;     // MLP hidden width H; 0: 4C
    bool swiglu = false, rmsnorm = false, qk_norm = false;
};
struct ActivationBytes {
    double activations = 0, workspace = 0;
};
// One pipeline stage's share of the model: its blocks, the token ids on the first stage, the
// final norm, logits, targets and loss on the last. A stage keeps what each micro-batch leaves
// between its forward and its backward (the blocks' kept tensors, attention row maxima, the
// stream of block inputs and outputs, the ids, the head's tensors) once per micro-batch in
// flight, and one copy of the scratch they share (the projection output; the recomputed
// layer's tensors: selective's shared copy, full's one layer). Without a pipeline: every block,
// first and last, one micro-batch.
struct StageShare {
    int layers = 0;
    bool first = true, last = true;
    int in_flight = 1;
};
ActivationBytes activation_bytes(const ActivationShape& s, int batch, int seq_len, Recompute r, int e);
ActivationBytes activation_bytes(const ActivationShape& s, int batch, int seq_len, Recompute r, int e, const StageShare& stage);

// Bytes one rank sends per optimizer step, by collective, as sixnd's communicators count them
// (ring algorithms: all-reduce 2(n-1)/n of the buffer; reduce-scatter and all-gather (n-1)/n):
//   stage 0: all-reduce of every unit's gradient on the last micro-step
//   stage 1: reduce-scatter of every unit on the last micro-step; all-gather after the update
//   stage 2: reduce-scatter of every unit on every micro-step; all-gather after the update
//   stage 3: reduce-scatter as stage 2; all-gathers of parameter units: the first micro-step's
//            forward gathers every unit, later forwards only units 3..last (the two slots still
//            hold units 1 and 2 from the backward before), and every backward units
//            last-2 .. 1 (the last two are still in their slots from the forward). From a
//            parameter count alone, every forward and backward gathers all of psi: an upper
//            bound (the paper's 3 psi on one micro-step), as which units stay is unknown.
struct CommBytes {
    double all_reduce = 0, reduce_scatter = 0, all_gather = 0;
    double total() const { return all_reduce + reduce_scatter + all_gather; }
};
CommBytes comm_bytes_per_step(const LayoutShape& layout, int zero_stage, int ranks, int e, double micro_steps);

// What --optimizer muon adds (train/muon.h). Workspace: one FP32 block unit (the Newton-Schulz
// inputs, gathered under ZeRO) and one rank's Newton-Schulz buffer, ns_floats (muon_ns_floats).
// Bytes: at stages 1-3 with n > 1 ranks, the FP32 all-gather of every block unit (the units
// between the embeddings and the final layernorm), (n-1)/n x 4 bytes x their elements per rank
// per step.
struct MuonCost {
    double workspace = 0, all_gather = 0;
};
MuonCost muon_cost(const LayoutShape& layout, int zero_stage, int ranks, double ns_floats);
// The all-gather alone, for block units of `block_elements` in all (a pipeline stage's).
double muon_all_gather_bytes(double block_elements, int zero_stage, int ranks);

// Muon's matrices, unit by unit, where they lie in the flat layout (train/muon.h builds them from
// the parameter layout; the planner from a run's model).
struct MuonMatrix {
    size_t offset = 0, numel = 0;  // into the flat layout
    int rows = 0, cols = 0;
};
struct MuonUnit {
    int unit = 0;               // index in the layout's units
    size_t begin = 0, end = 0;  // the unit in the flat layout
    std::vector<MuonMatrix> matrices;
};
// Whether a matrix overlaps a rank's part [lo, hi) of its unit: the rank orthogonalises it.
inline bool muon_overlaps(const MuonMatrix& t, size_t lo, size_t hi) { return t.offset < hi && t.offset + t.numel > lo; }
// The Newton-Schulz buffer, in floats, for the part [lo, hi) of unit u: the largest
// Ops::newton_schulz_floats(rows, cols) = 2 s^2 + s l (sides s <= l) over the matrices that
// overlap the part; 0 when none does. The trainer's Muon sizes its buffer as the largest of
// these over its units.
size_t muon_ns_floats(const MuonUnit& u, size_t lo, size_t hi);
// Rank `rank`'s Newton-Schulz buffer in floats under ZeRO: its part of each unit is the whole
// unit at stage 0 (or on one rank), else the rank-th of `ranks` equal slices (dist/zero.cpp's
// cut), so at 3 or more ranks a rank whose slices miss the widest matrix keeps a smaller one.
size_t muon_ns_floats(const std::vector<MuonUnit>& units, int zero_stage, int ranks, int rank);

}  // namespace sixnd::plan
