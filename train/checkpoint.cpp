#include "train/checkpoint.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string_view>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/hex.h"
#include "core/read_file.h"

namespace fs = std::filesystem;

namespace sixnd {

namespace {

std::string step_name(int step) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "step-%08d", step);
    return buf;
}

}  // namespace

uint64_t xxh64_bytes(const void* data, size_t bytes) { return XXH64(data, bytes, 0); }

CheckpointWriter::CheckpointWriter(const std::string& root, int step, bool create)
    : root_(root), final_(root + "/" + step_name(step)), tmp_(root + "/." + step_name(step) + ".tmp"), create_(create) {
    if (!create) return;
    std::error_code ec;
    fs::create_directories(root, ec);
    if (ec) throw Error(root, "cannot create checkpoint directory: " + ec.message());
    fs::remove_all(tmp_, ec);
    fs::create_directory(tmp_, ec);
    if (ec) throw Error(tmp_, "cannot create temporary checkpoint directory: " + ec.message());
}

CheckpointWriter::~CheckpointWriter() {
    if (committed_ || !create_) return;
    std::error_code ec;
    fs::remove_all(tmp_, ec);
}

void CheckpointWriter::add_file(const std::string& name, const void* data, size_t bytes) {
    write_file_atomically(tmp_ + "/" + name, std::string_view(static_cast<const char*>(data), bytes));
}

void CheckpointWriter::copy_file(const std::string& name, const std::string& src_path) {
    write_file_atomically(tmp_ + "/" + name, read_whole_file(src_path));
}

std::string CheckpointWriter::commit(nlohmann::json meta) {
    nlohmann::json files = nlohmann::json::object();
    for (const auto& e : fs::directory_iterator(tmp_)) {
        const std::string buf = read_whole_file(e.path().string());
        files[e.path().filename().string()] = {{"bytes", buf.size()}, {"xxh64", hex64(xxh64_bytes(buf.data(), buf.size()))}};
    }
    meta["files"] = files;
    const std::string text = meta.dump(2) + "\n";
    write_file_atomically(tmp_ + "/meta.json", text);
    write_file_atomically(tmp_ + "/DONE", "");
    std::error_code ec;
    if (fs::exists(final_)) {
        // Saving the same step again (a resumed run): replace the old copy only once the new one is whole.
        const std::string old = final_ + ".old";
        fs::remove_all(old, ec);
        fs::rename(final_, old, ec);
        if (ec) throw Error(final_, "cannot move the previous checkpoint aside: " + ec.message());
        fs::rename(tmp_, final_, ec);
        if (ec) throw Error(final_, "cannot rename the checkpoint into place: " + ec.message());
        fs::remove_all(old, ec);
    } else {
        fs::rename(tmp_, final_, ec);
        if (ec) throw Error(final_, "cannot rename the checkpoint into place: " + ec.message());
    }
    committed_ = true;
    return final_;
}

CheckpointReader::CheckpointReader(const std::string& dir) : dir_(dir) {
    if (!fs::is_directory(dir)) throw Error(dir, "no such checkpoint directory");
    if (!fs::exists(dir + "/DONE")) throw Error(dir, "incomplete checkpoint: the DONE marker is missing");
    const std::string mpath = dir + "/meta.json";
    const std::string text = read_whole_file(mpath);
    try {
        meta_ = nlohmann::json::parse(text.begin(), text.end());
    } catch (const std::exception& e) {
        throw Error(mpath, std::string("malformed JSON: ") + e.what());
    }
    if (meta_.value("format", "") != "sixnd-checkpoint" || !meta_.contains("files") || !meta_["files"].is_object())
        throw Error(mpath, "not a sixnd checkpoint description (format or file table missing)");
    for (auto& [name, info] : meta_["files"].items()) {
        const std::string p = dir + "/" + name;
        if (!fs::exists(p)) throw Error(p, "missing checkpoint file");
        const std::string buf = read_whole_file(p);
        size_t want = info.at("bytes").get<size_t>();
        if (buf.size() != want)
            throw Error(p, "truncated or resized: " + std::to_string(buf.size()) + " bytes, expected " + std::to_string(want));
        if (hex64(xxh64_bytes(buf.data(), buf.size())) != info.at("xxh64").get<std::string>())
            throw Error(p, "checksum mismatch: the file is corrupt");
    }
}

std::string CheckpointReader::read_file(const std::string& name) const {
    if (!has_file(name)) throw Error(dir_, "checkpoint has no file '" + name + "'");
    return read_whole_file(dir_ + "/" + name);
}

GPTConfig checkpoint_model_config(const CheckpointReader& ck) {
    GPTConfig c;
    try {
        const nlohmann::json& m = ck.meta().at("model");
        c.n_layer = m.at("n_layer");
        c.n_head = m.at("n_head");
        c.n_embd = m.at("n_embd");
        c.vocab_size = m.at("vocab_size");
        c.padded_vocab_size = m.at("padded_vocab_size");
        c.max_seq_len = m.at("max_seq_len");
    } catch (const nlohmann::json::exception& e) {
        throw Error(ck.dir() + "/meta.json", std::string("model description: ") + e.what());
    }
    c.validate(ck.dir() + "/meta.json");
    return c;
}

std::string latest_checkpoint(const std::string& root) {
    std::string best;
    if (!fs::is_directory(root)) return best;
    for (const auto& e : fs::directory_iterator(root)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("step-", 0) != 0 || name.size() != 13 || !fs::exists(e.path() / "DONE")) continue;
        if (best.empty() || name > fs::path(best).filename().string()) best = e.path().string();
    }
    return best;
}

void prune_checkpoints(const std::string& root, int keep) {
    std::vector<std::string> complete;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root)) {
        const std::string name = e.path().filename().string();
        if (name.rfind("step-", 0) == 0 && name.size() == 13 && fs::exists(e.path() / "DONE"))
            complete.push_back(e.path().string());
        else if (name.rfind(".step-", 0) == 0)
            fs::remove_all(e.path(), ec);
    }
    std::sort(complete.begin(), complete.end());
    if (keep <= 0 || complete.size() <= static_cast<size_t>(keep)) return;
    for (size_t i = 0; i + keep < complete.size(); i++) fs::remove_all(complete[i], ec);
}

}  // namespace sixnd
