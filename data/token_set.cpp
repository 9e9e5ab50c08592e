#include "data/token_set.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/hex.h"
#include "core/json_fault.h"
#include "core/log.h"
#include "core/read_file.h"

namespace sixnd {

void TokenSet::add(const std::string& path) {
    shards_.emplace_back(path);
    starts_.push_back(total_);
    total_ += shards_.back().size();
}

namespace {

// A manifest's shard name must stay inside the manifest's directory: a relative path without
// "..", resolving (links included) to a place under that directory.
std::string confined_path(const std::string& manifest, const std::string& dir, const std::string& file) {
    namespace fs = std::filesystem;
    fs::path rel(file);
    bool up = std::any_of(rel.begin(), rel.end(), [](const fs::path& part) { return part == ".."; });
    if (file.empty() || rel.is_absolute() || up)
        throw Error(manifest, "shard path '" + file + "' leaves the manifest's directory (only names inside it are allowed)");
    const std::string path = (dir.empty() ? "" : dir + "/") + file;
    std::error_code ec;
    const fs::path real = fs::weakly_canonical(path, ec);
    // A name that does not resolve (a link loop) cannot be opened either: the open names why.
    if (ec) return path;
    const fs::path base = fs::weakly_canonical(dir.empty() ? "." : dir, ec);
    auto b = base.begin(), r = real.begin();
    for (; b != base.end() && r != real.end() && *b == *r; ++b, ++r) {
    }
    if (ec || b != base.end())
        throw Error(manifest, "shard path '" + file + "' resolves outside the manifest's directory (a link?)");
    return path;
}

}  // namespace

// Reading every token (the vocabulary check, the content hash) runs at a few GB/s: from about
// this size the wait is long enough to say why.
constexpr size_t kAnnouncedBytes = size_t(1) << 30;

void TokenSet::announce_passes() const {
    size_t bytes = 0;
    for (const Shard& s : shards_) bytes += s.file_bytes();
    if (bytes < kAnnouncedBytes) return;
    char gb[32];
    std::snprintf(gb, sizeof gb, "%.1f", static_cast<double>(bytes) / 1e9);
    log_info(pattern_ + ": " + std::to_string(shards_.size()) + (shards_.size() == 1 ? " shard, " : " shards, ") + gb +
             " GB; reading every token once to check the ids and the content");
}

TokenSet::TokenSet(const std::string& spec, bool announce) : pattern_(spec) {
    const std::string key = "manifest.json";
    const size_t at = spec.rfind(key);
    const bool manifest = at != std::string::npos && (at + key.size() == spec.size() || spec[at + key.size()] == ':');
    if (!manifest) {
        std::error_code ec;
        if (std::filesystem::is_directory(spec, ec)) {
            // "data/" (a shell's completion) suggests data/*.bin, not data//*.bin.
            const std::string dir = spec.substr(0, std::max<size_t>(1, spec.find_last_not_of('/') + 1));
            throw Error(spec, "is a directory; give a shard glob (" + dir + "/*.bin) or a data manifest (" + dir +
                                  "/manifest.json)");
        }
        for (const auto& p : expand_glob(spec)) add(p);
        if (announce) announce_passes();
        return;
    }
    const std::string path = spec.substr(0, at + key.size());
    const std::string split = at + key.size() < spec.size() ? spec.substr(at + key.size() + 1) : "train";
    const std::string text = read_whole_file(path);  // names a missing file, a directory, ...
    const std::string dir = std::filesystem::path(path).parent_path().string();
    try {
        nlohmann::json m = nlohmann::json::parse(text);
        if (m.value("format", "") != "sixnd data manifest") throw Error(path, "not a sixnd data manifest");
        if (!m.at("output").contains(split)) throw Error(spec, "the manifest has no '" + split + "' split");
        tokenizer_hash_ = m.at("tokenizer").value("hash", "");
        const nlohmann::json& listed = m.at("output").at(split).at("shards");
        if (!listed.is_array()) throw Error(path, "the '" + split + "' split's shards are not a list");
        std::set<std::filesystem::path> seen;
        for (const auto& sh : listed) {
            const std::string file = confined_path(path, dir, sh.at("file").get<std::string>());
            // get<size_t> would take -1 for 2^64 - 1 and 3.5 for 3.
            const nlohmann::json& tokens = sh.at("tokens");
            if (!tokens.is_number_unsigned())
                throw Error(path, "the token count of " + file + " is " + tokens.dump() + ", not a whole number");
            add(file);  // first: it names a shard that cannot be opened
            // Listed twice (a hand edit), a shard would be read twice an epoch.
            std::error_code ec;
            const std::filesystem::path real = std::filesystem::weakly_canonical(file, ec);
            if (!seen.insert(ec ? std::filesystem::path(file) : real).second)
                throw Error(path, "the '" + split + "' split lists " + file + " twice");
            const Shard& s = shards_.back();
            if (s.size() != tokens.get<size_t>())
                throw Error(file, "holds " + std::to_string(s.size()) + " tokens but " + path + " says " + tokens.dump());
        }
        if (announce) announce_passes();
        // The content too: a shard replaced or damaged since the manifest was written would
        // otherwise train silently on other tokens.
        for (size_t i = 0; i < shards_.size(); i++) {
            std::string want = listed[i].at("tokens_xxh3_64").get<std::string>();
            std::transform(want.begin(), want.end(), want.begin(), [](unsigned char c) { return std::tolower(c); });
            const std::string got = hex64(shards_[i].tokens_hash());
            if (got != want)
                throw Error(shards_[i].path(), "content hash " + got + " differs from " + want + " recorded in " + path +
                                                   " (the shard was changed or damaged)");
        }
    } catch (const nlohmann::json::exception& e) {
        throw Error(path, "malformed data manifest: " + json_fault(e));
    }
    if (shards_.empty()) throw Error(spec, "the manifest lists no shards for this split");
}

void TokenSet::read(size_t begin, size_t count, int32_t* out) const {
    if (begin + count > total_)
        throw Error(pattern_, "read of tokens [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
                                  ") past the end of the " + std::to_string(total_) + " tokens");
    size_t s = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), begin) - starts_.begin()) - 1;
    size_t i = 0;
    while (i < count) {
        const Shard& sh = shards_[s];
        size_t local = begin + i - starts_[s];
        size_t take = std::min(count - i, sh.size() - local);
        sh.read(local, take, out + i);
        if (checked_vocab_ > 0)
            for (size_t j = 0; j < take; j++)
                if (static_cast<uint32_t>(out[i + j]) >= checked_vocab_)
                    throw Error(sh.path(), "token " + std::to_string(static_cast<uint32_t>(out[i + j])) + " at position " +
                                               std::to_string(local + j) + " is outside the model's vocabulary of " +
                                               std::to_string(checked_vocab_) + ": the shard changed after the run checked it");
        i += take;
        s++;
    }
}

void TokenSet::require_below(uint32_t limit, const std::string& outside) const {
    for (const auto& sh : shards_) {
        if (sh.max_token() < limit) continue;
        // Read as the full passes are, not through the map: a shard truncated since max_token's
        // pass is then an Error naming it, not a SIGBUS.
        size_t at = 0;
        sh.for_each_chunk([&](const int32_t* t, size_t n) {
            for (size_t k = 0; k < n; k++)
                if (static_cast<uint32_t>(t[k]) >= limit)
                    throw Error(sh.path(), "token " + std::to_string(static_cast<uint32_t>(t[k])) + " at position " +
                                               std::to_string(at + k) + " " + outside);
            at += n;
        });
    }
}

void TokenSet::check_vocab(int vocab_size) const {
    require_below(static_cast<uint32_t>(vocab_size), "is outside the model's vocabulary of " + std::to_string(vocab_size));
    checked_vocab_ = static_cast<uint32_t>(vocab_size);
}

}  // namespace sixnd
