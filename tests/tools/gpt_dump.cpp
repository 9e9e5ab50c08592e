// Test tool: runs one forward and backward of an llm.c model file on given tokens and writes
// what the PyTorch parity script compares: the loss (JSON), the logits [B*T, V] (raw float32)
// and every gradient (as an llm.c version-3 model file, so the script reads it like weights).
//   gpt_dump --model M.bin --tokens T.bin --batch B --seq-len T --dtype fp32 --attention flash
//            --recompute none --out DIR
// tokens file: B*T + 1 int32.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/backend.h"
#include "model/gpt.h"
#include "model/init.h"

using namespace sixnd;

int main(int argc, char** argv) {
    CLI::App app{"forward/backward dump for parity tests"};
    std::string model_path, tokens_path, out, dtype = "fp32", attention = "flash", recompute = "none";
    int B = 1, T = 1;
    app.add_option("--model", model_path)->required();
    app.add_option("--tokens", tokens_path)->required();
    app.add_option("--batch", B);
    app.add_option("--seq-len", T);
    app.add_option("--dtype", dtype);
    app.add_option("--attention", attention);
    app.add_option("--recompute", recompute);
    app.add_option("--out", out)->required();
    CLI11_PARSE(app, argc, argv);
    try {
        LlmcModel m = load_llmc_model(model_path);
        std::vector<int32_t> tok(static_cast<size_t>(B) * T + 1);
        std::ifstream tf(tokens_path, std::ios::binary);
        if (!tf.read(reinterpret_cast<char*>(tok.data()), static_cast<std::streamsize>(tok.size() * 4)))
            throw Error(tokens_path, "short tokens file");
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
        save_llmc_model(out + "/grads.bin", m.config, model.get_grads(), 3);
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
