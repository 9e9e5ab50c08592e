// sixnd export: a checkpoint -> a Hugging Face directory that transformers loads (--format hf):
// model.safetensors, config.json and generation_config.json (model/hf_gpt2.h), tokenizer.json
// and tokenizer_config.json (tokenizer/hf_export.h) when a tokenizer is known. The directory is
// built under a temporary name beside --out and renamed into place, so a failed export leaves
// nothing behind; an existing --out is replaced only when empty or an earlier export.

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>

#include "cli/verbs.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "core/progress_line.h"
#include "core/staging_dir.h"
#include "model/hf_gpt2.h"
#include "model/param_layout.h"
#include "tokenizer/hf_export.h"
#include "train/checkpoint.h"
#include "train/checkpoint_state.h"
#include "train/tokenizer_match.h"

namespace fs = std::filesystem;

namespace sixnd::cli {

namespace {

const std::set<std::string> kExportFiles = {"model.safetensors", "config.json", "generation_config.json",
                                            "tokenizer.json", "tokenizer_config.json"};

struct CheckpointParams {
    GPTConfig config;
    DType dtype = DType::f32;     // of params.bin
    std::vector<char> params;     // params.bin, in ParamLayout(config)
    std::string tokenizer_path;   // the checkpoint's copy of the tokenizer, or ""
    std::string tokenizer_hash;   // of the tokenizer it was trained with, or "" when none was given
};

// The one place export reads a checkpoint: meta.json's model and dtype, and the parameters
// through the loader the trainer and `sixnd sample` use.
CheckpointParams read_checkpoint_params(const std::string& dir) {
    CheckpointReader ck(dir);
    CheckpointParams p;
    p.config = ck.meta().model;
    p.dtype = parse_dtype(ck.meta().dtype);
    p.params = restore_params(ck, ParamLayout(p.config));
    if (ck.has_file("tokenizer.bin")) p.tokenizer_path = ck.path_of("tokenizer.bin");
    p.tokenizer_hash = ck.meta().tokenizer_hash;
    return p;
}

// --out must be new, an empty directory, or an earlier export (export's files only, its
// model.safetensors marked as sixnd's): nothing else is ever replaced.
void check_out(const fs::path& out) {
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(out, ec);
    if (!fs::exists(st)) return;
    if (!fs::is_directory(st)) refuse_non_directory_out(out, "sixnd export");
    // With error codes: std::filesystem's exception would reach the user as "filesystem error: ...".
    fs::directory_iterator entries(out, ec);
    if (ec) throw Error(out.string(), "cannot be listed: " + ec.message());
    for (const auto& e : entries) {
        const bool regular = e.is_regular_file(ec);
        if (ec) throw Error(e.path().string(), "cannot be looked at: " + ec.message());
        if (!kExportFiles.count(e.path().filename().string()) || !regular)
            throw Error(out.string(), "exists and holds '" + e.path().filename().string() +
                                          "', which no export writes: give a new or empty directory");
    }
    if (!fs::is_empty(out, ec) && !is_sixnd_export(out.string()))
        throw Error(out.string(), "exists and is not an earlier export (no model.safetensors that sixnd export wrote): "
                                  "give a new or empty directory");
}

// An export inside the checkpoint would make it other than what was saved (and an export at
// a run's checkpoints/step-N would read as an incomplete checkpoint of the run).
void check_out_not_in_checkpoint(const fs::path& out, const std::string& checkpoint) {
    std::error_code ec;
    const fs::path ck = fs::canonical(checkpoint, ec);
    if (ec) return;  // no such checkpoint: reading it says so
    const fs::path o = fs::weakly_canonical(fs::absolute(out, ec), ec);
    if (ec) return;
    for (fs::path p = o; !p.empty(); p = p.parent_path()) {
        if (p == ck) throw Error(out.string(), "is inside the checkpoint " + checkpoint + " (--checkpoint); write it elsewhere");
        if (p == p.parent_path()) break;
    }
}

// Names in a run's checkpoints/ that the run manages are not an export's place: it takes a
// step-N without DONE for a save it was interrupted in and replaces it, and it deletes every
// hidden .step-* at each save as what a crash left, so an export named step-* (its staging
// sibling is .step-*) or .step-* would be deleted under it.
void check_out_not_a_step(const fs::path& out) {
    const fs::path dir = fs::absolute(out).lexically_normal();  // out_dir_path's: it names a directory
    // The parent resolved: a symlink of another name may lead to a run's checkpoints/.
    std::error_code ec;
    const fs::path parent = fs::weakly_canonical(dir.parent_path(), ec);
    if ((ec ? dir.parent_path() : parent).filename() != "checkpoints") return;
    const std::string name = dir.filename().string();
    if (is_checkpoint_name(name))
        throw Error(out.string(), "is named as a run's checkpoint (checkpoints/step-N): the run would take it for an "
                                  "interrupted save of that step and replace it; write the export elsewhere");
    if (name.rfind("step-", 0) == 0 || name.rfind(".step-", 0) == 0)
        throw Error(out.string(), "is named as a run's checkpoint or its temporary (checkpoints/step-*, .step-*): the "
                                  "run deletes hidden .step-* directories at every save; write the export elsewhere");
}

// The export's files, written into dir.
void write_export(const std::string& dir, const CheckpointParams& ck, DType dtype, std::optional<int> eos, const Tokenizer* tok) {
    std::optional<ProgressLine> progress;
    save_hf_gpt2(dir, ck.config, ParamLayout(ck.config), ck.params.data(), ck.dtype, dtype, eos, [&](size_t done, size_t total) {
        if (!progress) progress.emplace(static_cast<long long>(total));
        if (!progress->due(static_cast<long long>(done))) return;
        char line[64];
        std::snprintf(line, sizeof line, "export: %.1f / %.1f MB", done / 1e6, total / 1e6);
        progress->show(static_cast<long long>(done), line);
    });
    if (tok) {
        export_hf_tokenizer_json(*tok, dir + "/tokenizer.json");
        write_file_atomically(dir + "/tokenizer_config.json", hf_tokenizer_config_json(*tok, ck.config.max_seq_len));
    }
}

}  // namespace

int run_export(int argc, char** argv) {
    CLI::App app{"Export a checkpoint as a Hugging Face model directory", "sixnd export"};
    std::string checkpoint, format = "hf", out_flag, dtype_flag, tokenizer_flag;
    app.add_option("--checkpoint", checkpoint, "checkpoint directory (a run's checkpoints/step-N)")->required();
    app.add_option("--format", format, "hf: model.safetensors + config.json for transformers' GPT2LMHeadModel")
        ->capture_default_str();
    app.add_option("--out", out_flag, "directory to write (new, empty, or an earlier export)")->required();
    app.add_option("--dtype", dtype_flag, "fp32 or bf16 (default: the checkpoint's)");
    app.add_option("--tokenizer", tokenizer_flag, "sixnd tokenizer file (default: the checkpoint's copy)");
    if (!parse_flags(app, argc, argv)) return 0;
    refuse_empty_values(app);
    if (format != "hf") throw Error("--format", "unknown format '" + format + "' (known: hf)");
    const fs::path out = out_dir_path(out_flag);
    check_out(out);
    check_out_not_in_checkpoint(out, checkpoint);
    check_out_not_a_step(out);

    const CheckpointParams ck = read_checkpoint_params(checkpoint);
    const GPTConfig& cfg = ck.config;
    cfg.require_gpt2(checkpoint, "Hugging Face GPT-2 exports");
    const DType dtype = dtype_flag.empty() ? ck.dtype : parse_dtype(dtype_flag);
    const std::string tok_path = tokenizer_flag.empty() ? ck.tokenizer_path : tokenizer_flag;
    std::unique_ptr<Tokenizer> tok;
    if (!tok_path.empty()) {
        tok = std::make_unique<Tokenizer>(Tokenizer::load(tok_path));
        require_model_vocab(*tok, tok_path, cfg.vocab_size);
        require_checkpoint_tokenizer(*tok, tok_path, ck.tokenizer_hash, checkpoint);
    } else {
        log_warn("the checkpoint holds no tokenizer and --tokenizer was not given: exporting the model only");
    }
    std::optional<int> eos;
    if (tok)
        if (auto id = tok->special_id("<|endoftext|>")) eos = static_cast<int>(*id);

    StagingDir stage(out, "export");
    const std::string staged = stage.path().string();
    try {
        write_export(staged, ck, dtype, eos, tok.get());
    } catch (const Error& e) {
        // A write fault (a full disk, a file-size limit) names the file as it would be in --out:
        // the hidden staging directory it was written in is gone when the error is read.
        if (e.where().rfind(staged, 0) != 0) throw;
        throw Error(out.string() + e.where().substr(staged.size()), e.fault());
    }
    stage.commit();
    log_info("wrote " + out.string() + " (GPT-2 " + cfg.describe() + ", " + dtype_name(dtype) + (tok ? ", tokenizer" : "") + ")");
    return 0;
}

}  // namespace sixnd::cli
