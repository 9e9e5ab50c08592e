#include "model/hf_gpt2.h"

#include <cctype>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/bf16.h"
#include "core/error.h"
#include "core/json_fault.h"
#include "core/printable.h"
#include "core/read_file.h"
#include "core/transfer.h"
#include "model/safetensors.h"

namespace fs = std::filesystem;

namespace sixnd {

namespace {

const std::string kPrefix = "transformer.";
// A metadata entry of every model.safetensors save_hf_gpt2 writes, beside transformers' "format".
const std::pair<std::string, std::string> kExportMark = {"written_by", "sixnd export"};
constexpr double kLayerNormEps = 1e-5;  // model/cpu/layernorm.cpp and the CUDA kernel

// transformers' name of a sixnd tensor, without the "transformer." prefix.
std::string hf_name(const TensorInfo& t) { return t.name == "wte" || t.name == "wpe" ? t.name + ".weight" : t.name; }

// The block matrices are transformers' Conv1D weights: stored (in, out).
bool is_conv1d(const TensorInfo& t) { return t.shape.size() == 2 && t.name.rfind("h.", 0) == 0; }

std::vector<int64_t> hf_shape(const TensorInfo& t, const GPTConfig& c) {
    if (t.name == "wte") return {c.vocab_size, c.n_embd};
    if (is_conv1d(t)) return {t.shape[1], t.shape[0]};
    return {t.shape.begin(), t.shape.end()};
}

size_t count(const std::vector<int64_t>& shape) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    return n;
}

std::string shape_str(const std::vector<int64_t>& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); i++) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + "]";
}

// dst[c * rows + r] = src[r * cols + c]: a [rows, cols] matrix becomes [cols, rows].
void transpose(const float* src, size_t rows, size_t cols, float* dst) {
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) dst[c * rows + r] = src[r * cols + c];
}

bool is_mask_buffer(const std::string& n) {
    // h.{i}.attn.bias (the causal mask) and h.{i}.attn.masked_bias: buffers older transformers saved.
    if (n.rfind("h.", 0) != 0) return false;
    size_t i = 2;
    while (i < n.size() && std::isdigit(static_cast<unsigned char>(n[i]))) i++;
    const std::string rest = n.substr(i);
    return i > 2 && (rest == ".attn.bias" || rest == ".attn.masked_bias");
}

nlohmann::ordered_json config_json(const GPTConfig& c, DType out, std::optional<int> eos) {
    const nlohmann::ordered_json eos_id = eos ? nlohmann::ordered_json(*eos) : nlohmann::ordered_json(nullptr);
    // GPT2Config's fields, in the order transformers writes them. sixnd trains without dropout.
    return {{"activation_function", "gelu_new"},
            {"architectures", {"GPT2LMHeadModel"}},
            {"attn_pdrop", 0.0},
            {"bos_token_id", eos_id},
            {"embd_pdrop", 0.0},
            {"eos_token_id", eos_id},
            {"initializer_range", 0.02},
            {"layer_norm_epsilon", kLayerNormEps},
            {"model_type", "gpt2"},
            {"n_ctx", c.max_seq_len},
            {"n_embd", c.n_embd},
            {"n_head", c.n_head},
            {"n_inner", nullptr},
            {"n_layer", c.n_layer},
            {"n_positions", c.max_seq_len},
            {"reorder_and_upcast_attn", false},
            {"resid_pdrop", 0.0},
            {"scale_attn_by_inverse_layer_idx", false},
            {"scale_attn_weights", true},
            {"tie_word_embeddings", true},
            {"torch_dtype", out == DType::f32 ? "float32" : "bfloat16"},
            {"use_cache", true},
            {"vocab_size", c.vocab_size}};
}

// config.json -> GPTConfig, refusing every knob sixnd does not compute. Absent knobs take
// GPT2Config's defaults, which are sixnd's.
GPTConfig config_from_json(const nlohmann::json& j, const std::string& where) {
    if (!j.is_object()) throw Error(where, "not a JSON object");
    const std::string type = j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
    if (type != "gpt2")
        throw Error(where, type.empty() ? "no model_type \"gpt2\": not a GPT-2 configuration"
                                        : "model_type '" + type + "' is not supported: sixnd reads GPT-2 (\"gpt2\") only");
    auto size = [&](const char* key) {
        if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() <= 0 || j[key].get<int64_t>() > INT_MAX)
            throw Error(where, std::string(key) + " is missing or not a positive integer");
        return j[key].get<int>();
    };
    GPTConfig c;
    c.n_layer = size("n_layer");
    c.n_head = size("n_head");
    c.n_embd = size("n_embd");
    c.vocab_size = size("vocab_size");
    c.max_seq_len = size("n_positions");
    // The sizes are held to their bounds before anything is computed from them: padding a
    // vocabulary near INT_MAX, or 4 x such an n_embd, would overflow.
    c.padded_vocab_size = c.vocab_size;
    c.validate(where);
    c.padded_vocab_size = pad_vocab(c.vocab_size);

    auto knob = [&](const char* key, const nlohmann::json& fallback) {
        return j.contains(key) && !j[key].is_null() ? j[key] : fallback;
    };
    const nlohmann::json act = knob("activation_function", "gelu_new");
    if (act != "gelu_new" && act != "gelu_pytorch_tanh")
        throw Error(where, "activation_function " + act.dump() + " is not supported: sixnd computes GELU's tanh approximation (gelu_new)");
    const nlohmann::json eps = knob("layer_norm_epsilon", kLayerNormEps);
    if (!eps.is_number() || std::fabs(eps.get<double>() - kLayerNormEps) > 1e-12)
        throw Error(where, "layer_norm_epsilon " + eps.dump() + " differs from sixnd's 1e-05");
    const nlohmann::json inner = knob("n_inner", 4 * c.n_embd);
    if (inner != 4 * c.n_embd)
        throw Error(where, "n_inner " + inner.dump() + " is not 4 x n_embd = " + std::to_string(4 * c.n_embd) + ", as sixnd's MLP is");
    const std::pair<const char*, bool> flags[] = {{"scale_attn_weights", true},
                                                  {"scale_attn_by_inverse_layer_idx", false},
                                                  {"add_cross_attention", false},
                                                  {"tie_word_embeddings", true}};
    for (const auto& [key, want] : flags)
        if (knob(key, want) != want)
            throw Error(where, std::string(key) + " " + j[key].dump() + " is not supported: sixnd's GPT-2 has " + key + " " +
                                   (want ? "true" : "false"));
    return c;
}

}  // namespace

void save_hf_gpt2(const std::string& dir, const GPTConfig& cfg, const ParamLayout& layout, const void* params, DType src,
                  DType out, std::optional<int> eos_token_id, const std::function<void(size_t, size_t)>& progress) {
    cfg.require_gpt2(dir, "Hugging Face GPT-2 exports");
    std::vector<StTensorSpec> specs;
    size_t total = 0, done = 0;
    for (const TensorInfo& t : layout.tensors()) {
        specs.push_back({kPrefix + hf_name(t), out == DType::f32 ? "F32" : "BF16", hf_shape(t, cfg)});
        total += count(specs.back().shape) * dtype_size(out);
    }
    SafetensorsWriter w(dir + "/model.safetensors", specs, {{"format", "pt"}, kExportMark});
    std::vector<float> vals, swapped;
    for (const TensorInfo& t : layout.tensors()) {
        const size_t n = count(hf_shape(t, cfg));  // wte: the first vocab_size rows
        done += n * dtype_size(out);
        if (src == out && !is_conv1d(t)) {
            w.write_next(static_cast<const char*>(params) + t.offset * dtype_size(src), n * dtype_size(src));
            if (progress) progress(done, total);
            continue;
        }
        vals.resize(n);
        if (src == DType::f32) {
            std::memcpy(vals.data(), static_cast<const float*>(params) + t.offset, n * 4);
        } else {
            const uint16_t* p = static_cast<const uint16_t*>(params) + t.offset;
            for (size_t i = 0; i < n; i++) vals[i] = bf16::to_float(p[i]);
        }
        if (is_conv1d(t)) {
            swapped.resize(n);
            transpose(vals.data(), static_cast<size_t>(t.shape[0]), static_cast<size_t>(t.shape[1]), swapped.data());
            vals.swap(swapped);
        }
        const std::vector<char> bytes = to_storage(vals.data(), n, out);
        w.write_next(bytes.data(), bytes.size());
        if (progress) progress(done, total);
    }
    w.commit();

    write_file_atomically(dir + "/config.json", config_json(cfg, out, eos_token_id).dump(2) + "\n");
    nlohmann::ordered_json gen = nlohmann::ordered_json::object();
    if (eos_token_id) gen = {{"bos_token_id", *eos_token_id}, {"eos_token_id", *eos_token_id}};
    write_file_atomically(dir + "/generation_config.json", gen.dump(2) + "\n");
}

bool is_sixnd_export(const std::string& dir) {
    try {
        const SafetensorsReader r(dir + "/model.safetensors");
        const auto it = r.metadata().find(kExportMark.first);
        return it != r.metadata().end() && it->second == kExportMark.second;
    } catch (const Error&) {
        return false;  // absent, unreadable or damaged: an export commits whole, so not one
    }
}

HfModel load_hf_gpt2(const std::string& dir) {
    if (path_type(dir) != fs::file_type::directory) throw Error(dir, "no such Hugging Face model directory");
    const std::string cpath = dir + "/config.json";
    // A config.json is a few hundred bytes: a device (/dev/zero), a FIFO or a huge file is refused
    // before it is read, rather than read until memory runs out or a writer comes.
    constexpr uintmax_t kMaxConfigBytes = 16u << 20;
    std::error_code ec;
    const fs::file_status cst = fs::status(cpath, ec);
    if (fs::exists(cst) && !fs::is_regular_file(cst)) throw Error(cpath, "not a regular file");
    const uintmax_t csize = fs::exists(cst) ? fs::file_size(cpath, ec) : 0;
    if (!ec && csize > kMaxConfigBytes)
        throw Error(cpath, "is " + std::to_string(csize) + " bytes, more than a GPT-2 config.json's 16 MiB at most");
    const std::string text = read_whole_file(cpath);
    HfModel m;
    try {
        m.config = config_from_json(nlohmann::json::parse(text), cpath);
    } catch (const nlohmann::json::exception& e) {
        throw Error(cpath, json_fault(e));
    }
    const GPTConfig& c = m.config;
    const std::string mpath = dir + "/model.safetensors";
    if (!fs::exists(mpath) && fs::exists(dir + "/model.safetensors.index.json"))
        throw Error(mpath, "missing: sharded safetensors (model.safetensors.index.json) are not supported");
    SafetensorsReader r(mpath);
    const ParamLayout layout(c);

    // Every file tensor is a GPT-2 parameter (prefixed or not), a mask buffer, or the tied head.
    std::map<std::string, const TensorInfo*> wanted;
    for (const TensorInfo& t : layout.tensors()) wanted[hf_name(t)] = &t;
    std::map<const TensorInfo*, const StTensor*> found;
    const StTensor* lm_head = nullptr;
    for (const StTensor& st : r.tensors()) {
        if (st.name == "lm_head.weight") {
            lm_head = &st;
            continue;
        }
        const std::string n = st.name.rfind(kPrefix, 0) == 0 ? st.name.substr(kPrefix.size()) : st.name;
        if (is_mask_buffer(n)) continue;
        auto it = wanted.find(n);
        if (it == wanted.end())
            throw Error(mpath, "tensor '" + printable(excerpt(st.name, 120)) + "' is not a parameter of GPT-2 with config.json's " +
                                   c.describe());
        if (found.count(it->second))
            throw Error(mpath, "tensor '" + n + "' appears twice (with and without the transformer. prefix)");
        found[it->second] = &st;
    }
    for (const TensorInfo& t : layout.tensors()) {
        auto it = found.find(&t);
        if (it == found.end()) throw Error(mpath, "missing tensor '" + kPrefix + hf_name(t) + "' (config.json: " + c.describe() + ")");
        const StTensor& st = *it->second;
        if (st.dtype != "F32" && st.dtype != "F16" && st.dtype != "BF16")
            throw Error(mpath, "tensor '" + st.name + "' has dtype " + st.dtype + "; GPT-2 parameters must be F32, F16 or BF16");
        if (st.shape != hf_shape(t, c))
            throw Error(mpath, "tensor '" + st.name + "' has shape " + shape_str(st.shape) + ", but config.json (" +
                                   c.describe() + ") implies " + shape_str(hf_shape(t, c)));
        m.dtype = m.dtype.empty() || m.dtype == st.dtype ? st.dtype : "mixed";
    }

    m.params.assign(layout.total(), 0.0f);
    std::vector<float> tmp;
    for (const TensorInfo& t : layout.tensors()) {
        const StTensor& st = *found[&t];
        float* dst = m.params.data() + t.offset;
        if (is_conv1d(t)) {
            tmp.resize(st.numel());
            r.read_f32(st, tmp.data());
            transpose(tmp.data(), static_cast<size_t>(t.shape[1]), static_cast<size_t>(t.shape[0]), dst);
        } else {
            r.read_f32(st, dst);
        }
        for (size_t i = 0; i < st.numel(); i++)
            if (!std::isfinite(dst[i])) throw Error(mpath, "tensor '" + st.name + "' holds a non-finite value at element " + std::to_string(i));
    }
    if (lm_head) {
        const std::vector<int64_t> want = {c.vocab_size, c.n_embd};
        if (lm_head->shape != want)
            throw Error(mpath, "lm_head.weight has shape " + shape_str(lm_head->shape) + ", expected " + shape_str(want));
        tmp.resize(lm_head->numel());
        r.read_f32(*lm_head, tmp.data());
        if (std::memcmp(tmp.data(), m.params.data() + layout.wte().offset, tmp.size() * 4) != 0)
            throw Error(mpath, "lm_head.weight differs from wte.weight: an untied LM head is not GPT-2 as sixnd computes it");
    }
    return m;
}

}  // namespace sixnd
