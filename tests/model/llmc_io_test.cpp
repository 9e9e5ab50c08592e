#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/bf16.h"
#include "core/error.h"
#include "model/init.h"
#include "tests/util/test_util.h"

using namespace sixnd;

namespace {

std::string error_of(const std::string& path) {
    try {
        load_llmc_model(path);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(LlmcModel, Fp32RoundTripIsExact) {
    test::TempDir t("sixnd_llmc_");
    GPTConfig c = preset_config("tiny");
    std::vector<float> p = gpt2_init(ParamLayout(c), c, 5);
    save_llmc_model(t.dir + "/m.bin", c, p, 3);
    LlmcModel m = load_llmc_model(t.dir + "/m.bin");
    EXPECT_EQ(m.version, 3);
    EXPECT_EQ(m.config.n_embd, c.n_embd);
    EXPECT_EQ(m.config.padded_vocab_size, c.padded_vocab_size);
    EXPECT_EQ(m.params, p);
}

TEST(LlmcModel, Bf16FileHoldsRoundedValues) {
    test::TempDir t("sixnd_llmc_");
    GPTConfig c = preset_config("tiny");
    std::vector<float> p = gpt2_init(ParamLayout(c), c, 6);
    save_llmc_model(t.dir + "/m.bin", c, p, 5);
    LlmcModel m = load_llmc_model(t.dir + "/m.bin");
    EXPECT_EQ(m.version, 5);
    for (size_t i = 0; i < p.size(); i++) ASSERT_EQ(m.params[i], static_cast<float>(bf16(p[i])));
}

TEST(LlmcModel, BadFilesNameTheFileAndTheFault) {
    test::TempDir t("sixnd_llmc_");
    GPTConfig c = preset_config("tiny");
    std::vector<float> p = gpt2_init(ParamLayout(c), c, 7);
    const std::string good = t.dir + "/m.bin";
    save_llmc_model(good, c, p, 3);

    std::filesystem::copy_file(good, t.dir + "/short.bin");
    std::filesystem::resize_file(t.dir + "/short.bin", std::filesystem::file_size(good) - 10);
    EXPECT_NE(error_of(t.dir + "/short.bin").find("short.bin: truncated"), std::string::npos) << error_of(t.dir + "/short.bin");

    std::filesystem::copy_file(good, t.dir + "/magic.bin");
    {
        std::fstream f(t.dir + "/magic.bin", std::ios::in | std::ios::out | std::ios::binary);
        int32_t bad = 12345;
        f.write(reinterpret_cast<const char*>(&bad), 4);
    }
    EXPECT_NE(error_of(t.dir + "/magic.bin").find("bad magic 12345"), std::string::npos);

    {
        std::ofstream f(t.dir + "/tiny.bin", std::ios::binary);
        f << "not a model";
    }
    EXPECT_NE(error_of(t.dir + "/tiny.bin").find("shorter than its 1024-byte header"), std::string::npos);
    EXPECT_NE(error_of(t.dir + "/missing.bin").find("missing.bin: cannot open"), std::string::npos);
}

TEST(Init, Gpt2InitStatistics) {
    GPTConfig c = preset_config("d6", 512);
    ParamLayout l(c);
    std::vector<float> p = gpt2_init(l, c, 1);
    auto stddev = [&](const TensorInfo& t, size_t n) {
        double s = 0;
        for (size_t i = 0; i < n; i++) s += double(p[t.offset + i]) * p[t.offset + i];
        return std::sqrt(s / n);
    };
    EXPECT_NEAR(stddev(l.find("h.0.mlp.c_fc.weight"), l.find("h.0.mlp.c_fc.weight").numel), 0.02, 0.0005);
    EXPECT_NEAR(stddev(l.find("h.0.attn.c_proj.weight"), l.find("h.0.attn.c_proj.weight").numel),
                0.02 / std::sqrt(2.0 * c.n_layer), 0.0005);
    EXPECT_EQ(p[l.find("h.2.ln_1.weight").offset], 1.0f);
    EXPECT_EQ(p[l.find("h.2.attn.c_attn.bias").offset], 0.0f);
    // same seed, same values; another seed, other values
    EXPECT_EQ(gpt2_init(l, c, 1), p);
    EXPECT_NE(gpt2_init(l, c, 2), p);
}

// llm.c files hold GPT-2 only: a knob model is refused naming the knob, and nothing is written.
TEST(LlmcModel, RefusesKnobModels) {
    test::TempDir t("sixnd_llmc_");
    for (const char* preset : {"llama-tiny", "speedrun-tiny"}) {
        GPTConfig c = preset_config(preset);
        std::vector<float> p = gpt2_init(ParamLayout(c), c, 5);
        try {
            save_llmc_model(t.dir + "/m.bin", c, p, 3);
            ADD_FAILURE() << preset << " was written";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("--pos rope"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("llm.c"), std::string::npos) << e.what();
        }
        EXPECT_FALSE(std::filesystem::exists(t.dir + "/m.bin"));
    }
    GPTConfig c = preset_config("tiny");
    c.bias = false;
    EXPECT_THROW(save_llmc_model(t.dir + "/m.bin", c, gpt2_init(ParamLayout(c), c, 5), 3), Error);
}
