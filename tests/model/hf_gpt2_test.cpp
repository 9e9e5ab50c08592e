// Hugging Face GPT-2 directories: sixnd -> HF -> sixnd is bitwise exact in FP32 (from any
// unit alignment, vocabulary padding dropped and restored as zeros); BF16 export holds the
// rounded values; the names and shapes are transformers'; both name styles, a tied lm_head and
// the old mask buffers are read; every way a directory can fail to be GPT-2 is one Error.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/bf16.h"
#include "core/error.h"
#include "core/read_file.h"
#include "core/transfer.h"
#include "model/hf_gpt2.h"
#include "model/init.h"
#include "model/safetensors.h"
#include "tests/util/test_util.h"

using namespace sixnd;

namespace {

// Vocabulary 101 pads to 128, so the padding cut is exercised.
GPTConfig tiny() { return preset_config("tiny"); }

// Random values everywhere except the padded vocabulary rows (zero, as sixnd keeps them).
std::vector<float> random_params(const GPTConfig& c, uint64_t seed) {
    ParamLayout layout(c);
    std::vector<float> p = gpt2_init(layout, c, seed);
    std::vector<float> r = test::random_floats(p.size(), seed + 1);
    for (const TensorInfo& t : layout.tensors()) {
        const size_t n = t.name == "wte" ? static_cast<size_t>(c.vocab_size) * c.n_embd : t.numel;
        for (size_t i = 0; i < n; i++) p[t.offset + i] = r[t.offset + i];
    }
    return p;
}

std::string error_of(const std::string& dir) {
    try {
        load_hf_gpt2(dir);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

nlohmann::json read_json(const std::string& path) { return nlohmann::json::parse(read_whole_file(path)); }

void write_json(const std::string& path, const nlohmann::json& j) { std::ofstream(path) << j.dump(2); }

// Rewrites dir/model.safetensors through `edit`, which sees (and may change) every tensor spec
// and its FP32 values before they are written back in the given dtype.
void rewrite_model(const std::string& dir,
                   const std::function<void(std::vector<StTensorSpec>&, std::vector<std::vector<float>>&)>& edit,
                   const std::string& dtype = "F32") {
    std::vector<StTensorSpec> specs;
    std::vector<std::vector<float>> values;
    {
        SafetensorsReader r(dir + "/model.safetensors");
        for (const StTensor& t : r.tensors()) {
            specs.push_back({t.name, dtype, t.shape});
            values.emplace_back(t.numel());
            r.read_f32(t, values.back().data());
        }
    }
    edit(specs, values);
    SafetensorsWriter w(dir + "/model.safetensors", specs, {});
    for (size_t i = 0; i < specs.size(); i++) {
        if (specs[i].dtype == "F32") {
            w.write_next(values[i].data(), values[i].size() * 4);
        } else {
            const std::vector<char> b = to_storage(values[i].data(), values[i].size(), DType::bf16);
            w.write_next(b.data(), b.size());
        }
    }
    w.commit();
}

}  // namespace

TEST(HfGpt2, Fp32RoundTripIsBitwiseFromAnyAlignment) {
    const GPTConfig c = tiny();
    const std::vector<float> p = random_params(c, 11);
    for (size_t align : {64, 256}) {
        test::TempDir t("sixnd_hf_");
        // The checkpoint layout of a 4-rank run (alignment 256) exports the same tensors.
        const ParamLayout written(c, align);
        std::vector<float> placed(written.total(), 0.0f);
        relayout_range(ParamLayout(c), written, 0, p.size(), p.data(), placed.data(), 4);
        save_hf_gpt2(t.dir, c, written, placed.data(), DType::f32, DType::f32, 100);
        HfModel m = load_hf_gpt2(t.dir);
        EXPECT_EQ(m.dtype, "F32");
        EXPECT_EQ(m.config.n_layer, c.n_layer);
        EXPECT_EQ(m.config.n_head, c.n_head);
        EXPECT_EQ(m.config.n_embd, c.n_embd);
        EXPECT_EQ(m.config.vocab_size, c.vocab_size);
        EXPECT_EQ(m.config.padded_vocab_size, c.padded_vocab_size);
        EXPECT_EQ(m.config.max_seq_len, c.max_seq_len);
        ASSERT_EQ(m.params.size(), p.size());
        EXPECT_EQ(std::memcmp(m.params.data(), p.data(), p.size() * 4), 0) << "alignment " << align;
    }
}

TEST(HfGpt2, Bf16SourceAndBf16OutputHoldTheRoundedValues) {
    test::TempDir t("sixnd_hf_");
    const GPTConfig c = tiny();
    const ParamLayout layout(c);
    const std::vector<float> p = random_params(c, 12);
    save_hf_gpt2(t.dir, c, layout, p.data(), DType::f32, DType::bf16, std::nullopt);
    HfModel m = load_hf_gpt2(t.dir);
    EXPECT_EQ(m.dtype, "BF16");
    for (size_t i = 0; i < p.size(); i++) ASSERT_EQ(m.params[i], bf16::to_float(bf16::from_float(p[i]))) << i;
    EXPECT_EQ(read_json(t.dir + "/config.json")["torch_dtype"], "bfloat16");

    // A BF16 parameter buffer (a BF16 checkpoint's params.bin) exported as FP32 is exact.
    test::TempDir t2("sixnd_hf_");
    const std::vector<char> stored = to_storage(p.data(), p.size(), DType::bf16);
    save_hf_gpt2(t2.dir, c, layout, stored.data(), DType::bf16, DType::f32, std::nullopt);
    HfModel m2 = load_hf_gpt2(t2.dir);
    EXPECT_EQ(m2.dtype, "F32");
    EXPECT_EQ(m2.params, m.params);
}

TEST(HfGpt2, NamesShapesAndConfigAreTransformers) {
    test::TempDir t("sixnd_hf_");
    const GPTConfig c = tiny();
    const ParamLayout layout(c);
    const std::vector<float> p = random_params(c, 13);
    save_hf_gpt2(t.dir, c, layout, p.data(), DType::f32, DType::f32, 100);
    SafetensorsReader r(t.dir + "/model.safetensors");
    EXPECT_EQ(r.tensors().size(), layout.tensors().size()) << "no lm_head.weight: it is tied to wte";
    EXPECT_EQ(r.metadata().at("format"), "pt");
    const int C = c.n_embd;
    auto shape_of = [&](const std::string& n) {
        const StTensor* s = r.find(n);
        return s ? s->shape : std::vector<int64_t>{-1};
    };
    EXPECT_EQ(shape_of("transformer.wte.weight"), (std::vector<int64_t>{c.vocab_size, C}));
    EXPECT_EQ(shape_of("transformer.wpe.weight"), (std::vector<int64_t>{c.max_seq_len, C}));
    EXPECT_EQ(shape_of("transformer.h.1.attn.c_attn.weight"), (std::vector<int64_t>{C, 3 * C}));
    EXPECT_EQ(shape_of("transformer.h.1.attn.c_attn.bias"), (std::vector<int64_t>{3 * C}));
    EXPECT_EQ(shape_of("transformer.h.0.mlp.c_fc.weight"), (std::vector<int64_t>{C, 4 * C}));
    EXPECT_EQ(shape_of("transformer.h.0.mlp.c_proj.weight"), (std::vector<int64_t>{4 * C, C}));
    EXPECT_EQ(shape_of("transformer.ln_f.bias"), (std::vector<int64_t>{C}));

    // Conv1D layout: file[i][o] == sixnd[o][i].
    const StTensor* fc = r.find("transformer.h.0.mlp.c_fc.weight");
    std::vector<float> v(fc->numel());
    r.read_f32(*fc, v.data());
    const TensorInfo& ti = layout.block_tensor(0, kFcW);  // [4C, C]
    for (int o = 0; o < 4 * C; o += 7)
        for (int i = 0; i < C; i += 5) ASSERT_EQ(v[static_cast<size_t>(i) * 4 * C + o], p[ti.offset + static_cast<size_t>(o) * C + i]);

    const nlohmann::json cfg = read_json(t.dir + "/config.json");
    EXPECT_EQ(cfg["model_type"], "gpt2");
    EXPECT_EQ(cfg["architectures"], nlohmann::json::array({"GPT2LMHeadModel"}));
    EXPECT_EQ(cfg["n_layer"], c.n_layer);
    EXPECT_EQ(cfg["n_head"], c.n_head);
    EXPECT_EQ(cfg["n_embd"], C);
    EXPECT_EQ(cfg["n_positions"], c.max_seq_len);
    EXPECT_EQ(cfg["vocab_size"], c.vocab_size);
    EXPECT_EQ(cfg["activation_function"], "gelu_new");
    EXPECT_EQ(cfg["layer_norm_epsilon"], 1e-5);
    EXPECT_EQ(cfg["tie_word_embeddings"], true);
    EXPECT_EQ(cfg["eos_token_id"], 100);
    EXPECT_EQ(read_json(t.dir + "/generation_config.json")["eos_token_id"], 100);
}

TEST(HfGpt2, ReadsUnprefixedNamesTiedHeadAndMaskBuffers) {
    test::TempDir t("sixnd_hf_");
    const GPTConfig c = tiny();
    const std::vector<float> p = random_params(c, 14);
    save_hf_gpt2(t.dir, c, ParamLayout(c), p.data(), DType::f32, DType::f32, std::nullopt);
    // As OpenAI's GPT-2 is published: no prefix, the causal-mask buffers, an explicit tied head.
    rewrite_model(t.dir, [&](std::vector<StTensorSpec>& s, std::vector<std::vector<float>>& v) {
        std::vector<float> wte;
        for (size_t i = 0; i < s.size(); i++) {
            s[i].name = s[i].name.substr(std::string("transformer.").size());
            if (s[i].name == "wte.weight") wte = v[i];
        }
        for (int l = 0; l < c.n_layer; l++) {
            const int64_t T = c.max_seq_len;
            s.push_back({"h." + std::to_string(l) + ".attn.bias", "F32", {1, 1, T, T}});
            v.emplace_back(static_cast<size_t>(T * T), 1.0f);
        }
        s.push_back({"lm_head.weight", "F32", {c.vocab_size, c.n_embd}});
        v.push_back(wte);
    });
    HfModel m = load_hf_gpt2(t.dir);
    EXPECT_EQ(m.params, p);

    // BF16 parameters are read too (values chosen exactly representable in BF16).
    rewrite_model(t.dir, [](std::vector<StTensorSpec>&, std::vector<std::vector<float>>& v) {
        for (auto& t : v)
            for (float& x : t) x = std::round(x * 64) / 64;
    }, "BF16");
    EXPECT_EQ(load_hf_gpt2(t.dir).dtype, "BF16");
}

TEST(HfGpt2, WhatIsNotGpt2IsRefusedWithOneError) {
    const GPTConfig c = tiny();
    const std::vector<float> p = random_params(c, 15);
    using Specs = std::vector<StTensorSpec>;
    using Values = std::vector<std::vector<float>>;
    auto index = [](Specs& s, const std::string& name) {
        for (size_t i = 0; i < s.size(); i++)
            if (s[i].name == name) return i;
        throw std::runtime_error("test: no tensor " + name);
    };
    const struct {
        const char* what;
        std::function<void(nlohmann::json&)> config;
        std::function<void(Specs&, Values&)> model;
        const char* file;
        const char* words;
    } cases[] = {
        {"llama config", [](nlohmann::json& j) { j["model_type"] = "llama"; }, nullptr, "config.json", "model_type 'llama'"},
        {"exact GELU", [](nlohmann::json& j) { j["activation_function"] = "gelu"; }, nullptr, "config.json", "activation_function"},
        {"other epsilon", [](nlohmann::json& j) { j["layer_norm_epsilon"] = 1e-6; }, nullptr, "config.json", "layer_norm_epsilon"},
        {"wider MLP", [](nlohmann::json& j) { j["n_inner"] = 100; }, nullptr, "config.json", "n_inner"},
        {"untied config", [](nlohmann::json& j) { j["tie_word_embeddings"] = false; }, nullptr, "config.json",
         "tie_word_embeddings"},
        {"layer-scaled attention", [](nlohmann::json& j) { j["scale_attn_by_inverse_layer_idx"] = true; }, nullptr,
         "config.json", "scale_attn_by_inverse_layer_idx"},
        {"no n_layer", [](nlohmann::json& j) { j.erase("n_layer"); }, nullptr, "config.json", "n_layer"},
        {"heads do not divide", [](nlohmann::json& j) { j["n_head"] = 5; }, nullptr, "config.json", "divisible"},
        // A size an int holds but no model has: padding it to a multiple of 128 would overflow.
        {"vocabulary of INT_MAX", [](nlohmann::json& j) { j["vocab_size"] = INT_MAX; }, nullptr, "config.json",
         "vocab=2147483647 padded_vocab=2147483647"},
        // 4 x n_embd, which the refusal's description works out (is it GPT-2's MLP?), is past an int.
        {"n_embd of 2^30", [](nlohmann::json& j) { j["n_embd"] = 1 << 30; }, nullptr, "config.json",
         "beyond any real model"},
        {"config says more layers", [](nlohmann::json& j) { j["n_layer"] = 3; }, nullptr, "model.safetensors",
         "missing tensor 'transformer.h.2.ln_1.weight'"},
        {"missing tensor", nullptr,
         [&](Specs& s, Values& v) {
             size_t i = index(s, "transformer.h.1.mlp.c_proj.bias");
             s.erase(s.begin() + static_cast<long>(i));
             v.erase(v.begin() + static_cast<long>(i));
         },
         "model.safetensors", "missing tensor 'transformer.h.1.mlp.c_proj.bias'"},
        {"Linear instead of Conv1D layout", nullptr,
         [&](Specs& s, Values&) {
             auto& sh = s[index(s, "transformer.h.0.attn.c_attn.weight")].shape;
             std::swap(sh[0], sh[1]);
         },
         "model.safetensors", "has shape [144, 48]"},
        {"padded vocabulary", nullptr,
         [&](Specs& s, Values& v) {
             size_t i = index(s, "transformer.wte.weight");
             s[i].shape[0] = c.padded_vocab_size;
             v[i].resize(static_cast<size_t>(c.padded_vocab_size) * c.n_embd, 0.0f);
         },
         "model.safetensors", "wte.weight' has shape [128, 48]"},
        {"foreign tensor", nullptr,
         [&](Specs& s, Values& v) {
             s.push_back({"transformer.h.0.attn.q_attn.weight", "F32", {2}});
             v.push_back({0, 0});
         },
         "model.safetensors", "q_attn.weight' is not a parameter of GPT-2"},
        {"name twice", nullptr,
         [&](Specs& s, Values& v) {
             s.push_back({"ln_f.bias", "F32", {c.n_embd}});
             v.emplace_back(static_cast<size_t>(c.n_embd), 0.0f);
         },
         "model.safetensors", "appears twice"},
        {"untied head", nullptr,
         [&](Specs& s, Values& v) {
             std::vector<float> head = v[index(s, "transformer.wte.weight")];
             head[7] += 1.0f;
             s.push_back({"lm_head.weight", "F32", {c.vocab_size, c.n_embd}});
             v.push_back(head);
         },
         "model.safetensors", "untied LM head"},
        {"non-finite weight", nullptr,
         [&](Specs& s, Values& v) { v[index(s, "transformer.h.1.ln_2.weight")][3] = std::numeric_limits<float>::infinity(); },
         "model.safetensors", "non-finite value at element 3"},
    };
    for (const auto& k : cases) {
        test::TempDir t("sixnd_hf_");
        save_hf_gpt2(t.dir, c, ParamLayout(c), p.data(), DType::f32, DType::f32, std::nullopt);
        if (k.config) {
            nlohmann::json j = read_json(t.dir + "/config.json");
            k.config(j);
            write_json(t.dir + "/config.json", j);
        }
        if (k.model) rewrite_model(t.dir, k.model);
        const std::string e = error_of(t.dir);
        EXPECT_NE(e.find(t.dir + "/" + k.file), std::string::npos) << k.what << ": " << e;
        EXPECT_NE(e.find(k.words), std::string::npos) << k.what << ": " << e;
        EXPECT_EQ(e.find('\n'), std::string::npos) << k.what << ": " << e;
    }
    test::TempDir t("sixnd_hf_");
    EXPECT_NE(error_of(t.dir + "/absent").find("no such Hugging Face model directory"), std::string::npos);
    EXPECT_NE(error_of(t.dir).find("config.json"), std::string::npos);
}

// The Hugging Face export is GPT-2's: a knob model is refused naming the knob.
TEST(HfGpt2, ExportRefusesKnobModels) {
    test::TempDir t("sixnd_hf_");
    GPTConfig c = tiny();
    c.mlp = MlpKind::relu2;
    const ParamLayout l(c);
    const std::vector<float> p(l.total(), 0.0f);
    try {
        save_hf_gpt2(t.dir, c, l, p.data(), DType::f32, DType::f32, std::nullopt, nullptr);
        ADD_FAILURE() << "exported";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("--mlp relu2"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(t.dir + "/model.safetensors"));
}
