#include "train/data_identity.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "core/error.h"
#include "core/hex.h"
#include "core/printable.h"
#include "data/shard.h"
#include "tokenizer/utf8.h"
#include "train/checkpoint.h"

namespace sixnd {

using nlohmann::json;

json data_json(const TokenSet& ts) {
    json shards = json::array();
    std::string ident;
    for (const auto& s : ts.shards()) {
        std::error_code ec;
        const std::filesystem::path abs = std::filesystem::weakly_canonical(s.path(), ec);
        const std::string hash = hex64(s.tokens_hash());
        const std::string path = ec ? s.path() : abs.string();
        // Recorded as JSON text in the run log and the checkpoints.
        if (!valid_utf8(path))
            throw Error(printable(path), "a shard whose path is not valid UTF-8, which the run log and checkpoints record as "
                                         "JSON text: rename it");
        shards.push_back({{"path", path}, {"tokens", s.size()}, {"tokens_xxh3_64", hash}});
        ident += std::to_string(s.size()) + ":" + hash + ";";
    }
    return json{{"pattern", ts.pattern()}, {"tokens", ts.size()}, {"shards", shards},
                {"hash", hex64(xxh64_bytes(ident.data(), ident.size()))}};
}

namespace {

std::string shard_name(const json& shard) {
    return std::filesystem::path(shard.value("path", "")).filename().string();
}

// "1 shard (train.bin, 4000 tokens)", "3 shards (a.bin .. c.bin, 12000 tokens)".
std::string describe_data(const json& d) {
    const json& sh = d.value("shards", json::array());
    if (sh.empty()) return "no shards";
    std::string names = shard_name(sh.front()) + (sh.size() > 1 ? " .. " + shard_name(sh.back()) : "");
    return std::to_string(sh.size()) + (sh.size() == 1 ? " shard (" : " shards (") + names + ", " +
           std::to_string(d.value("tokens", uint64_t{0})) + " tokens)";
}

}  // namespace

std::string data_change(const json& then, const json& now) {
    const json& a = then.value("shards", json::array());
    const json& b = now.value("shards", json::array());
    const bool legacy = std::any_of(a.begin(), a.end(), [](const json& s) { return !s.contains("tokens_xxh3_64"); });
    auto same = [&](const json& x, const json& y) {
        return x.value("tokens", uint64_t{0}) == y.value("tokens", uint64_t{0}) &&
               (legacy ? shard_name(x) == shard_name(y) : x.at("tokens_xxh3_64") == y.at("tokens_xxh3_64"));
    };
    // The first shard that differs is named: among many shards, the totals alone do not say
    // which file was rewritten, removed or added.
    size_t i = 0;
    while (i < a.size() && i < b.size() && same(a[i], b[i])) i++;
    if (i == a.size() && i == b.size()) return "";
    auto tokens = [](const json& s) { return std::to_string(s.value("tokens", uint64_t{0})); };
    if (!legacy && i < a.size() && i < b.size() && shard_name(a[i]) == shard_name(b[i]))
        return shard_name(a[i]) + " changed in place (" + tokens(a[i]) + (tokens(a[i]) == tokens(b[i]) ? "" : " -> " + tokens(b[i])) +
               " tokens, content hash " + a[i].value("tokens_xxh3_64", "") + " -> " + b[i].value("tokens_xxh3_64", "") + ")";
    const std::string change = describe_data(then) + " -> " + describe_data(now);
    if (a.size() < 2 && b.size() < 2) return change;
    auto side = [&](const json& sh) { return i < sh.size() ? shard_name(sh[i]) + " (" + tokens(sh[i]) + " tokens)" : "none"; };
    return change + ", first difference at shard " + std::to_string(i + 1) + ": " + side(a) + " -> " + side(b);
}


std::string shard_in_both(const TokenSet& train, const TokenSet& val) {
    std::set<size_t> val_sizes;
    for (const Shard& s : val.shards())
        if (s.size() > 0) val_sizes.insert(s.size());
    // A copy of a training shard holds its tokens as much as a link to it does. Only shards of a
    // size found on both sides are hashed (the training shards' hashes are the run's data
    // identity anyway), so other validation shards cost no pass.
    std::set<std::pair<dev_t, ino_t>> files;
    std::map<size_t, std::set<uint64_t>> contents;
    struct stat st {};
    for (const Shard& s : train.shards()) {
        if (stat(s.path().c_str(), &st) == 0) files.emplace(st.st_dev, st.st_ino);
        if (val_sizes.count(s.size())) contents[s.size()].insert(s.tokens_hash());
    }
    for (const Shard& s : val.shards()) {
        if (stat(s.path().c_str(), &st) == 0 && files.count({st.st_dev, st.st_ino})) return s.path();
        const auto same_size = contents.find(s.size());
        if (same_size != contents.end() && same_size->second.count(s.tokens_hash())) return s.path();
    }
    return "";
}

}  // namespace sixnd
