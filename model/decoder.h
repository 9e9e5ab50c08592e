// Incremental decoding with a KV cache, one sequence at a time: each step embeds one token at
// the next position, appends its q, k, v rows to every layer's cache, attends from that one
// query over the cached positions (Ops::attention_decode), and returns the next-token logits.
// Work per step is O(t) rather than re-running the whole prefix.
#pragma once
#include <vector>

#include "core/memory.h"
#include "model/gpt.h"

namespace sixnd {

class Decoder {
public:
    // max_len: cache length; at most the model's max_seq_len.
    Decoder(GPT& model, int max_len);
    // Feeds `token` at the next position; returns logits over the real vocabulary.
    std::vector<float> step(int token);
    int position() const { return pos_; }
    int max_len() const { return S_; }

private:
    void norm(void* out, const void* inp, const TensorInfo& w, const TensorInfo* b);

    GPT& m_;
    int S_;
    int pos_ = 0;
    std::vector<DeviceBuffer> bufs_;
    std::vector<void*> cache_;  // per layer [S, qkv_width]: q, k, v as attention sees them
    void* qkv_row_ = nullptr;   // c_attn output before qk-norm
    void *x_, *ln_, *atty_, *proj_, *res2_, *fch_, *fch_act_, *logits_;
    float *mean_, *rstd_, *qk_rstd_;
    int32_t* tok_;
};

}  // namespace sixnd
