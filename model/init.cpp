#include "model/init.h"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "core/atomic_file.h"
#include "core/bf16.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/transfer.h"

namespace sixnd {

std::vector<float> gpt2_init(const ParamLayout& layout, const GPTConfig& cfg, uint64_t seed) {
    std::vector<float> p(layout.total(), 0.0f);
    const double residual_std = 0.02 / std::sqrt(2.0 * cfg.n_layer);
    const auto& ts = layout.tensors();
    for (size_t i = 0; i < ts.size(); i++) {
        const TensorInfo& t = ts[i];
        float* dst = p.data() + t.offset;
        const std::string& n = t.name;
        auto ends_with = [&](const char* suffix) {
            size_t k = std::strlen(suffix);
            return n.size() >= k && n.compare(n.size() - k, k, suffix) == 0;
        };
        if (ends_with("ln_1.weight") || ends_with("ln_2.weight") || n == "ln_f.weight") {
            std::fill(dst, dst + t.numel, 1.0f);
            continue;
        }
        if (!t.decay()) continue;  // biases and layernorm biases start at zero
        const double stddev = ends_with("c_proj.weight") ? residual_std : 0.02;
        Rng rng(seed * 0x100000001b3ull + i);
        size_t rows = static_cast<size_t>(n == "wte" || n == "lm_head.weight" ? cfg.vocab_size : t.shape[0]);
        size_t cols = t.numel / static_cast<size_t>(t.shape[0]);
        for (size_t k = 0; k < rows * cols; k++) dst[k] = static_cast<float>(rng.normal() * stddev);
    }
    return p;
}

namespace {

constexpr int32_t kLlmcMagic = 20240326;

// Visits the tensors in llm.c's file order: wte, wpe, then each kind of block tensor for all
// layers, then ln_f. llm.c's per-kind order is GPT-2's block order, which BlockTensor follows.
void for_each_llmc_tensor(const ParamLayout& layout, const GPTConfig& cfg, const std::function<void(const TensorInfo&)>& fn) {
    fn(layout.wte());
    fn(layout.wpe());
    for (int k = 0; k < kBlockTensors; k++)
        for (int l = 0; l < cfg.n_layer; l++) fn(layout.block_tensor(l, static_cast<BlockTensor>(k)));
    fn(layout.lnf_w());
    fn(layout.lnf_b());
}

// The parameters an llm.c header implies (wte with its padded rows, wpe, the blocks, ln_f),
// in 128-bit arithmetic: it is computed from the header alone, so that a corrupt header fails
// on the file size before anything is allocated.
unsigned __int128 llmc_param_count(const GPTConfig& c) {
    using u128 = unsigned __int128;
    const u128 C = static_cast<u128>(c.n_embd);
    return static_cast<u128>(c.padded_vocab_size) * C + static_cast<u128>(c.max_seq_len) * C +
           static_cast<u128>(c.n_layer) * (12 * C * C + 13 * C) + 2 * C;
}

}  // namespace

LlmcModel load_llmc_model(const std::string& path) {
    // Checked before opening: a directory opens and reads as a short file, and opening a FIFO
    // waits for a writer that may never come.
    struct stat st {};
    if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        throw Error(path, S_ISDIR(st.st_mode) ? "is a directory, not an llm.c model file" : "not a regular file");
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw Error(path, std::string("cannot open llm.c model file: ") + std::strerror(errno));
    struct Closer {
        FILE* f;
        ~Closer() { std::fclose(f); }
    } closer{f};
    int32_t h[256];
    if (std::fread(h, sizeof(int32_t), 256, f) != 256) throw Error(path, "truncated llm.c model file: shorter than its 1024-byte header");
    if (h[0] != kLlmcMagic) throw Error(path, "bad magic " + std::to_string(h[0]) + " (expected 20240326): not an llm.c model file");
    if (h[1] != 3 && h[1] != 5)
        throw Error(path, "unsupported llm.c model version " + std::to_string(h[1]) + " (expected 3 for fp32 or 5 for bf16)");
    LlmcModel m;
    m.version = h[1];
    GPTConfig& c = m.config;
    c.max_seq_len = h[2];
    c.vocab_size = h[3];
    c.n_layer = h[4];
    c.n_head = h[5];
    c.n_embd = h[6];
    c.padded_vocab_size = h[7];
    c.validate(path);

    const size_t elem = m.version == 3 ? 4 : 2;
    std::fseek(f, 0, SEEK_END);
    const long file_bytes = std::ftell(f);
    std::fseek(f, 256 * 4, SEEK_SET);
    const unsigned __int128 expect = 1024 + llmc_param_count(c) * elem;
    if (file_bytes < 0 || static_cast<unsigned __int128>(file_bytes) != expect) {
        const bool huge = expect > static_cast<unsigned __int128>(1) << 62;
        throw Error(path, std::string(static_cast<unsigned __int128>(file_bytes) < expect ? "truncated" : "oversized") +
                              " llm.c model file: header (" + c.describe() + ") implies " +
                              (huge ? std::string("more than 2^62") : std::to_string(static_cast<uint64_t>(expect))) +
                              " bytes but the file has " + std::to_string(file_bytes));
    }
    const ParamLayout layout(c);
    m.params.assign(layout.total(), 0.0f);
    std::vector<uint16_t> tmp;
    for_each_llmc_tensor(layout, c, [&](const TensorInfo& t) {
        float* dst = m.params.data() + t.offset;
        bool ok;
        if (m.version == 3) {
            ok = std::fread(dst, 4, t.numel, f) == t.numel;
        } else {
            tmp.resize(t.numel);
            ok = std::fread(tmp.data(), 2, t.numel, f) == t.numel;
            for (size_t i = 0; i < t.numel; i++) dst[i] = bf16::to_float(tmp[i]);
        }
        if (!ok) throw Error(path, "read failed in tensor " + t.name);
    });
    return m;
}

void save_llmc_model(const std::string& path, const GPTConfig& cfg, const std::vector<float>& params, int version) {
    if (version != 3 && version != 5) throw Error(path, "llm.c model version must be 3 or 5");
    cfg.require_gpt2(path, "llm.c model files");
    ParamLayout layout(cfg);
    if (params.size() != layout.total()) throw Error(path, "parameter count does not match the config");
    AtomicFile f(path);
    int32_t h[256] = {};
    h[0] = kLlmcMagic;
    h[1] = version;
    h[2] = cfg.max_seq_len;
    h[3] = cfg.vocab_size;
    h[4] = cfg.n_layer;
    h[5] = cfg.n_head;
    h[6] = cfg.n_embd;
    h[7] = cfg.padded_vocab_size;
    f.write(h, sizeof h);
    for_each_llmc_tensor(layout, cfg, [&](const TensorInfo& t) {
        const float* src = params.data() + t.offset;
        if (version == 3) f.write(src, t.numel * 4);
        else f.write(to_storage(src, t.numel, DType::bf16).data(), t.numel * 2);
    });
    f.commit();
}

}  // namespace sixnd
