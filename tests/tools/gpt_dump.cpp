// Test tool: runs one forward and backward of an llm.c model file on given tokens and writes
// what the PyTorch parity script compares: the loss (JSON), the logits [B*T, V] (raw float32)
// and every gradient (as an llm.c version-3 model file, so the script reads it like weights).
//   gpt_dump --model M.bin --tokens T.bin --batch B --seq-len T --dtype fp32 --attention flash
//            --recompute none --out DIR
// tokens file: B*T + 1 int32.
// Models llm.c files cannot hold (the architecture knobs) come as a meta.json-style model record
// and raw float32 parameters in ParamLayout order (unit_align 64); the gradients are then
// written the same way (grads.f32):
//   gpt_dump --config MODEL.json --params P.f32 --tokens ... --out DIR
//   gpt_dump --config MODEL.json --init-seed S --out DIR    writes only DIR/params.f32, the
//                                                           parameters `--init random --seed S` starts from
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/backend.h"
#include "model/gpt.h"
#include "model/init.h"
#include "model/param_layout.h"

using namespace sixnd;

int main(int argc, char** argv) {
    CLI::App app{"forward/backward dump for parity tests"};
    std::string model_path, config_path, params_path, tokens_path, out, dtype = "fp32", attention = "flash",
                                                                     recompute = "none";
    int B = 1, T = 1;
    long long init_seed = -1;
    app.add_option("--model", model_path);
    app.add_option("--config", config_path);
    app.add_option("--params", params_path);
    app.add_option("--init-seed", init_seed);
    app.add_option("--tokens", tokens_path);
    app.add_option("--batch", B);
    app.add_option("--seq-len", T);
    app.add_option("--dtype", dtype);
    app.add_option("--attention", attention);
    app.add_option("--recompute", recompute);
    app.add_option("--out", out)->required();
    CLI11_PARSE(app, argc, argv);
    try {
        LlmcModel m;
        if (!config_path.empty()) {
            std::ifstream cf(config_path);
            m.config = GPTConfig::from_json(nlohmann::json::parse(cf));
            m.config.validate(config_path);
            const ParamLayout layout(m.config);
            if (init_seed >= 0) {
                const std::vector<float> p = gpt2_init(layout, m.config, static_cast<uint64_t>(init_seed));
                std::ofstream pf(out + "/params.f32", std::ios::binary);
                pf.write(reinterpret_cast<const char*>(p.data()), static_cast<std::streamsize>(p.size() * 4));
                return 0;
            }
            m.params.resize(layout.total());
            std::ifstream pf(params_path, std::ios::binary);
            if (!pf.read(reinterpret_cast<char*>(m.params.data()), static_cast<std::streamsize>(m.params.size() * 4)))
                throw Error(params_path, "short parameter file");
        } else {
            m = load_llmc_model(model_path);
        }
        std::vector<int32_t> tok(static_cast<size_t>(B) * T + 1);
        std::ifstream tf(tokens_path, std::ios::binary);
        if (!tf.read(reinterpret_cast<char*>(tok.data()), static_cast<std::streamsize>(tok.size() * 4)))
            throw Error(tokens_path, "short tokens file");
        for (size_t i = 0; i < tok.size(); i++)
            if (tok[i] < 0 || tok[i] >= m.config.vocab_size)
                throw Error(tokens_path, "token " + std::to_string(tok[i]) + " at index " + std::to_string(i) +
                                             " is outside the vocabulary of " + std::to_string(m.config.vocab_size));
        Backend be = make_backend("cpu", parse_dtype(dtype));
        ModelOptions mo;
        mo.attention = parse_attention(attention);
        mo.recompute = parse_recompute(recompute);
        GPT model(m.config, *be.ops, mo);
        model.set_params(m.params);
        float eval_loss = model.forward(tok.data(), tok.data() + 1, B, T);
        std::vector<float> logits = model.get_logits();
        model.zero_grad();
        float loss = model.forward(tok.data(), tok.data() + 1, B, T, true);
        model.backward();
        if (config_path.empty()) {
            save_llmc_model(out + "/grads.bin", m.config, model.get_grads(), 3);
        } else {
            const std::vector<float> g = model.get_grads();
            std::ofstream gf(out + "/grads.f32", std::ios::binary);
            gf.write(reinterpret_cast<const char*>(g.data()), static_cast<std::streamsize>(g.size() * 4));
        }
        std::ofstream lf(out + "/logits.bin", std::ios::binary);
        lf.write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.size() * 4));
        std::ofstream jf(out + "/loss.json");
        jf << nlohmann::json{{"loss", loss}, {"eval_loss", eval_loss}}.dump() << "\n";
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gpt_dump: %s\n", e.what());
        return 1;
    }
    return 0;
}
