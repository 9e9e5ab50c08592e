// Where every parameter lives. All parameters are one flat buffer; GPT-2-named tensors are
// views into it. The buffer is cut into units — the embeddings, each transformer block, the
// final layernorm — each padded to a multiple of `unit_align` elements so that a unit splits
// evenly over ranks. Gradients, master weights and Adam moments share this layout, so a
// rank's shard is one [begin, end) range in all of them.
//
// Inside a block the tensors follow GPT-2's order; weights are [out, in] as in llm.c. The
// architecture knobs only drop or reshape tensors, never rename them: with --pos rope there is
// no wpe; with --bias off no Linear or LayerNorm bias; RMSNorm has no bias; c_attn.weight is
// [C + 2*NKV*hs, C]; c_fc.weight is [fc_width, C] and mlp.c_proj.weight [C, H]; untied
// embeddings add lm_head.weight [Vp, C] to the embeddings unit, after wte (and wpe): the unit
// the tied head already lives in, so the unit-hook order (unit 0 opened for the embedding and
// again for the head) is the same for both, and every 2-D tensor of a block unit "h.N" is
// still a hidden matrix.
// With the defaults the layout is GPT-2's, tensor for tensor.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "model/config.h"

namespace sixnd {

struct TensorInfo {
    std::string name;          // GPT-2 name: wte, wpe, h.3.attn.c_attn.weight, ln_f.bias, ...
    std::vector<int> shape;    // [out, in] for weights
    size_t offset = 0;         // in elements, into the flat buffer
    size_t numel = 0;
    int unit = 0;
    bool decay() const { return shape.size() >= 2; }  // weight decay applies to matrices only
};

struct UnitInfo {
    std::string name;   // "embeddings", "h.0", ..., "ln_f"
    size_t begin = 0;   // first element
    size_t end = 0;     // one past the last element, padding included
    size_t used = 0;    // elements holding parameters (the rest is padding)
    size_t size() const { return end - begin; }
};

// The tensors of one block, in layout order; indices into ParamLayout::block_tensor().
enum BlockTensor {
    kLn1W, kLn1B, kQkvW, kQkvB, kAttProjW, kAttProjB, kLn2W, kLn2B, kFcW, kFcB, kFcProjW, kFcProjB, kBlockTensors
};

class ParamLayout {
public:
    explicit ParamLayout(const GPTConfig& cfg, size_t unit_align = 64);

    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const std::vector<UnitInfo>& units() const { return units_; }
    size_t total() const { return total_; }         // elements, padding included
    size_t num_params() const;                      // elements holding parameters
    const TensorInfo& find(const std::string& name) const;  // throws Error when unknown

    const TensorInfo& wte() const { return tensors_[0]; }
    // The tensors a knob may remove are pointers, null when absent; the reference forms throw.
    const TensorInfo* pos_emb() const { return at(wpe_); }
    const TensorInfo* block(int layer, BlockTensor t) const { return at(block_[layer * kBlockTensors + t]); }
    const TensorInfo* lnf_bias() const { return at(lnf_b_); }
    const TensorInfo& wpe() const { return must(wpe_, "wpe"); }
    const TensorInfo& block_tensor(int layer, BlockTensor t) const;
    const TensorInfo& lnf_w() const { return tensors_[lnf_w_]; }
    const TensorInfo& lnf_b() const { return must(lnf_b_, "ln_f.bias"); }
    // The LM head's weight [Vp, C]: wte when tied, else lm_head.weight.
    const TensorInfo& head() const { return tensors_[head_]; }
    // A 2-D tensor of a block unit: a Linear's weight inside the transformer (Muon's matrices;
    // with the head, the matmul weights).
    bool hidden_matrix(const TensorInfo& t) const { return t.shape.size() == 2 && units_[t.unit].name.rfind("h.", 0) == 0; }

private:
    const TensorInfo* at(int i) const { return i < 0 ? nullptr : &tensors_[i]; }
    const TensorInfo& must(int i, const char* name) const;

    std::vector<TensorInfo> tensors_;
    std::vector<int> block_;  // index into tensors_ of each (layer, BlockTensor), -1 when absent
    int wpe_ = -1, lnf_w_ = -1, lnf_b_ = -1, head_ = 0;
    std::vector<UnitInfo> units_;
    size_t total_ = 0;
};

// Copies elements [from_begin, from_begin + count) of a buffer in layout `from` to their places
// in a full buffer in layout `to` (same model, other unit alignment: another world size).
// Padding is dropped; es is the element size in bytes.
void relayout_range(const ParamLayout& from, const ParamLayout& to, size_t from_begin, size_t count, const void* src,
                    void* dst_full, size_t es);

}  // namespace sixnd
