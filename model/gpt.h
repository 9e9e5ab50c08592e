// GPT-2 forward and backward, orchestrated over an Ops backend. Pre-LN blocks (the GPT-2
// form; the architecture knobs of GPTConfig swap LN for RMSNorm, gelu for relu2 or swiglu,
// add qk-norm and rope between c_attn and attention, share kv heads, untie the head):
//   x_0 = wte[tokens] + wpe[pos]
//   block l:  ln1 = LN(x_l); qkv = ln1 W_qkv^T + b; a = attention(qkv); r2 = x_l + a W_proj^T + b
//             ln2 = LN(r2); h = gelu(ln2 W_fc^T + b); x_{l+1} = r2 + h W_fcproj^T + b
//   logits = LN_f(x_L) wte^T  (tied head, over the padded vocabulary; padded columns get no
//   probability), loss = mean cross-entropy over the B*T positions.
// The model never knows which backend, rank or recompute policy's memory it runs on beyond
// the Ops it holds; distributed engines see it only through UnitHooks.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/memory.h"
#include "core/unit_hooks.h"
#include "model/config.h"
#include "model/ops.h"
#include "model/param_layout.h"
#include "model/recompute.h"

namespace sixnd {

struct ModelOptions {
    AttentionKind attention = AttentionKind::flash;
    Recompute recompute = Recompute::none;
    size_t unit_align = 64;  // elements; ZeRO raises it so each unit splits evenly over ranks
    // ZeRO 2/3 keep full gradients (and, at stage 3, full parameters) for one unit at a time in
    // buffers of their own; then the model does not allocate the flat buffers at all.
    bool allocate_params = true;
    bool allocate_grads = true;
};

class GPT : public UnitMemory {
public:
    GPT(const GPTConfig& cfg, Ops& ops, const ModelOptions& opt = {});
    ~GPT() override;
    GPT(const GPT&) = delete;
    GPT& operator=(const GPT&) = delete;

    const GPTConfig& config() const { return cfg_; }
    const ParamLayout& layout() const { return layout_; }
    const ModelOptions& options() const { return opt_; }
    Ops& ops() { return ops_; }
    void set_hooks(UnitHooks* hooks) { hooks_ = hooks ? hooks : &no_hooks_; }

    // Flat device buffers in ops.dtype(), layout().total() elements each (null when not allocated).
    void* params() const { return params_.get(); }
    void* grads() const { return grads_.get(); }
    // Points the parameters and/or gradients of one unit at other memory (unit-sized, in the
    // unit's layout, padding included); null leaves that side as it is. Engines call this from
    // their hooks, before the model touches the unit.
    void map_unit(int unit, void* params, void* grads) override;
    std::vector<UnitSpan> unit_spans() const;

    // Host FP32 copies in layout order (padding included), cast to/from the storage dtype.
    void set_params(const std::vector<float>& host);
    std::vector<float> get_grads() const;
    void zero_grad();

    // Forward over B x T tokens (host arrays; targets may be null). Returns the mean loss,
    // or NaN without targets. With `for_backward`, the classifier leaves dlogits for
    // backward(), scaled by dloss_scale / (B*T) — the trainer passes 1/grad_accum_steps.
    float forward(const int32_t* inputs, const int32_t* targets, int B, int T, bool for_backward = false,
                  float dloss_scale = 1.0f);
    // Accumulates the gradient of the last forward(for_backward = true) into grads().
    void backward();

    // Device pointer to one parameter tensor (in ops.dtype()); null for an absent (null) tensor.
    void* param(const TensorInfo& t) const;
    void* param(const TensorInfo* t) const;

    // Logits of the last forward: [B*T, vocab_size] on the host. After a for_backward pass the
    // buffer holds dlogits instead, and asking for logits then throws Error.
    std::vector<float> get_logits() const;
    // Per-position cross-entropy of the last forward with targets: [B*T] on the host.
    const std::vector<float>& token_losses() const { return token_losses_; }

    // With tracking on, each forward keeps every attention row's largest pre-softmax logit
    // (B*NH*T floats a layer); attention_max_logits() then gives the largest per layer of the
    // last forward — the logit-growth evidence of a loss spike. Off by default: it costs a
    // download per layer when read.
    void set_track_attention_max(bool on);
    std::vector<float> attention_max_logits() const;

private:
    struct Activations;
    void ensure_activations(int B, int T);
    void block_forward(int l, bool keep_output);
    void block_backward(int l);
    void norm_forward(void* out, float* mean, float* rstd, const void* inp, const TensorInfo& w, const TensorInfo* b,
                      int N);
    void norm_backward(void* dinp, const void* dout, const void* inp, const TensorInfo& w, const TensorInfo* b,
                       const float* mean, const float* rstd, int N);
    void attention_input(int l);  // layer l's attention input: qk-norm, then rope
    void mlp_activation(int l);   // layer l's fch -> fch_act
    void* grad(const TensorInfo& t) const;
    void* grad(const TensorInfo* t) const;

    GPTConfig cfg_;
    Ops& ops_;
    MemoryBackend& mem_;
    ModelOptions opt_;
    ParamLayout layout_;
    UnitHooks no_hooks_;
    UnitHooks* hooks_ = &no_hooks_;
    DeviceBuffer params_;
    DeviceBuffer grads_;
    std::vector<void*> unit_params_;  // base pointer of each unit's parameters
    std::vector<void*> unit_grads_;
    std::unique_ptr<Activations> act_;
    int B_ = 0, T_ = 0;
    bool backward_ready_ = false;
    bool logits_are_grads_ = false;  // the classifier overwrote the logits with dlogits
    std::vector<float> token_losses_;
    bool track_attention_max_ = false;
};

}  // namespace sixnd
