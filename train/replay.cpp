#include "train/replay.h"


#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "core/error.h"
#include "core/progress_line.h"
#include "core/hex.h"
#include "core/json_fault.h"
#include "core/log.h"
#include "core/read_file.h"
#include "core/rng.h"
#include "data/shard.h"
#include "data/token_set.h"
#include "model/backend.h"
#include "model/gpt.h"
#include "train/checkpoint.h"
#include "train/checkpoint_meta.h"
#include "train/checkpoint_state.h"
#include "train/data_identity.h"

namespace sixnd {

using nlohmann::json;
namespace fs = std::filesystem;

double spike_threshold(double mean, double std, const ReplayRule& rule) {
    return mean + std::max(rule.sigmas * std, rule.margin * std::fabs(mean));
}

std::string replay_verdict(const ReplayLosses& l, const ReplayRule& rule) {
    if (l.spike > spike_threshold(l.others_mean, l.others_std, rule))
        return l.earlier_spike > spike_threshold(l.earlier_others_mean, l.earlier_others_std, rule) ? "data" : "interaction";
    const double high = spike_threshold(l.reference, 0, rule);  // false for a NaN reference
    // A run still learning had a higher loss at any older checkpoint: a baseline that fell from
    // the earlier checkpoint to this one is of an older state, not a damaged one.
    return l.spike > high && l.others_mean > high && l.others_mean >= l.earlier_others_mean ? "state" : "not_reproducible";
}

SpikeReportRows read_spike_report(const std::string& path) {
    json j;
    try {
        j = json::parse(read_whole_file(path));
    } catch (const json::exception& e) {
        throw Error(path, "not a JSON spike report: " + json_fault(e));
    }
    auto bad = [&](const std::string& fault) { return Error(path, fault); };
    if (!j.is_object()) throw bad("not a spike report (expected a JSON object)");
    SpikeReportRows r;
    r.reference = std::numeric_limits<double>::quiet_NaN();
    if (!j.contains("step") || !j["step"].is_number_integer() || j["step"].get<long long>() < 1)
        throw bad("has no \"step\" (a positive integer: the step that spiked)");
    r.step = j["step"].get<long long>();
    const json batch = j.value("batch", json());
    if (!batch.is_object() || !batch.contains("rows") || !batch["rows"].is_array() || batch["rows"].empty())
        throw bad("has no batch rows (batch.rows): nothing to replay");
    json T = batch.value("seq_len", json());
    if (T.is_null() && j.contains("run") && j["run"].is_object()) T = j["run"].value("seq_len", json());
    if (!T.is_number_integer() || T.get<long long>() < 1 || T.get<long long>() > (1 << 20))
        throw bad("has no usable seq_len (batch.seq_len or run.seq_len: a positive integer)");
    r.seq_len = T.get<int>();
    for (size_t i = 0; i < batch["rows"].size(); i++) {
        const json& row = batch["rows"][i];
        const std::string where = "batch row " + std::to_string(i);
        if (!row.is_object() || !row.contains("shard") || !row["shard"].is_string() || row["shard"].get<std::string>().empty())
            throw bad(where + " has no \"shard\" path");
        // The parser keeps every integer >= 0 unsigned: one past 2^63 is an offset too (beyond any shard).
        if (!row.contains("offset") || !row["offset"].is_number_unsigned())
            throw bad(where + " has no \"offset\" (a token offset >= 0)");
        const json loss = row.value("loss", json());
        r.rows.push_back({row["shard"].get<std::string>(), row["offset"].get<uint64_t>(),
                          loss.is_number() ? loss.get<double>() : std::numeric_limits<double>::quiet_NaN()});
    }
    for (const auto& [obj, key] : {std::pair<const char*, const char*>{"trigger", "loss_mean"}, {"batch", "recent_loss_mean"}}) {
        const json o = j.value(obj, json());
        if (std::isnan(r.reference) && o.is_object() && o.contains(key) && o[key].is_number() && std::isfinite(o[key].get<double>()))
            r.reference = o[key].get<double>();
    }
    r.run = j.contains("run") && j["run"].is_object() ? j["run"] : json::object();
    if (r.run.value("checkpoint_earlier", json()).is_string()) r.checkpoint_earlier = r.run["checkpoint_earlier"].get<std::string>();
    return r;
}

void check_checkpoint_of_report(const CheckpointMeta& ck, const std::string& ck_dir, const SpikeReportRows& rep,
                                const std::string& report_path) {
    auto refuse = [&](const std::string& fault) {
        throw Error("--checkpoint", ck_dir + " cannot be from the run of " + report_path + ": " + fault);
    };
    if (ck.step >= rep.step) refuse("it is at step " + std::to_string(ck.step) + ", not before the spike at step " + std::to_string(rep.step));
    // The report's own run id settles it. Only reports without one are judged by what else they
    // record, which a resume with --allow-resume-changes may have changed within one run.
    const json run_id = rep.run.value("run_id", json());
    if (run_id.is_string()) {
        if (run_id.get<std::string>() != ck.run_id)
            refuse("its run id is " + ck.run_id + ", the report's run is " + run_id.get<std::string>());
        return;
    }
    // The checkpoints the report names, where they can still be read, tell the run's lineage.
    for (const char* key : {"checkpoint_before", "checkpoint_earlier"}) {
        const json named = rep.run.value(key, json());
        if (!named.is_string()) continue;
        const std::string meta_path = named.get<std::string>() + "/meta.json";
        std::error_code ec;
        if (!fs::is_regular_file(meta_path, ec)) continue;
        const CheckpointMeta theirs = CheckpointMeta::parse(read_whole_file(meta_path), meta_path);
        if (theirs.run_id != ck.run_id)
            refuse("its run id is " + ck.run_id + ", the report's run." + key + " (" + named.get<std::string>() + ") is of run " +
                   theirs.run_id);
    }
    const json dtype = rep.run.value("dtype", json());
    if (dtype.is_string() && dtype.get<std::string>() != ck.dtype)
        refuse("it holds " + ck.dtype + " weights, the run trained in " + dtype.get<std::string>());
    const json& cfg = ck.config;
    for (const char* key : {"seed", "shuffle"}) {
        const json theirs = rep.run.value(key, json()), ours = cfg.is_object() ? cfg.value(key, json()) : json();
        if (!theirs.is_null() && !ours.is_null() && theirs != ours)
            refuse(std::string("it was written with --") + key + " " + ours.dump() + ", the run had " + theirs.dump() +
                   " (a resume keeps it unless --allow-resume-changes)");
    }
}

namespace {

std::string canonical(const std::string& p) {
    std::error_code ec;
    const fs::path c = fs::weakly_canonical(p, ec);
    return ec ? p : c.string();
}

// A row of seq_len + 1 tokens, where it came from and the tokens themselves.
struct Row {
    std::optional<uint64_t> at;  // where it starts in --train-data's concatenation, if it is from there
    std::vector<int32_t> tokens;
};

// Where each shard of the data starts in their concatenation, by canonical path.
std::map<std::string, uint64_t> shard_starts(const TokenSet& data) {
    std::map<std::string, uint64_t> starts;
    for (size_t i = 0; i < data.shards().size(); i++) starts.emplace(canonical(data.shards()[i].path()), data.start(i));
    return starts;
}

// What the run recorded of its shards named `name` ("N tokens, content hash H"); none for a
// shard it did not train on (a junk batch's) or a checkpoint from before shards carried a hash.
std::string content_text(uint64_t tokens, const std::string& hash) {
    return std::to_string(tokens) + " tokens, content hash " + hash;
}

std::set<std::string> recorded_contents(const json& trained_on, const std::string& name) {
    std::set<std::string> out;
    for (const json& s : trained_on.value("shards", json::array()))
        if (fs::path(s.value("path", "")).filename() == name && s.contains("tokens_xxh3_64"))
            out.insert(content_text(s.value("tokens", uint64_t{0}), s["tokens_xxh3_64"].get<std::string>()));
    return out;
}

std::string content_of(const Shard& s) { return content_text(s.size(), hex64(s.tokens_hash())); }

// The report's rows, read from their shards: the path as written, else a shard of the same
// name beside the report or in --train-data (a report read on another machine or after the data
// moved); of these, the first shard whose content the run trained on (a file of that name rewritten
// since, or another data set's under the same relative path, holds other rows than the spike's),
// taken as --train-data's where that holds the same tokens under the name.
// A row that runs past its shard's end goes on at the start of the next shard of --train-data,
// as the loader reads it (data/loader.h); the report names only where it starts.
std::vector<Row> spike_rows(const SpikeReportRows& rep, const std::string& report_path, const TokenSet& data,
                            const json& trained_on, int vocab) {
    const std::map<std::string, uint64_t> starts = shard_starts(data);
    std::map<std::string, std::unique_ptr<Shard>> opened;
    // --train-data's own shards are opened (and hashed) already.
    std::map<std::string, const Shard*> own;
    for (const Shard& s : data.shards()) own.emplace(canonical(s.path()), &s);
    auto open = [&](const std::string& path) -> const Shard& {
        const std::string key = canonical(path);
        if (const auto it = own.find(key); it != own.end()) return *it->second;
        auto& shard = opened[key];
        if (!shard) shard = std::make_unique<Shard>(path);
        return *shard;
    };
    std::vector<Row> rows;
    const size_t n = static_cast<size_t>(rep.seq_len) + 1;
    for (size_t i = 0; i < rep.rows.size(); i++) {
        const SpikeRow& r = rep.rows[i];
        const fs::path name = fs::path(r.shard).filename();
        // A junk batch's shard is written beside its report, under a path relative to where
        // the run was started.
        std::vector<std::string> candidates{r.shard, (fs::path(report_path).parent_path() / name).string()};
        for (const Shard& s : data.shards())
            if (fs::path(s.path()).filename() == name) candidates.push_back(s.path());
        const std::set<std::string> recorded = recorded_contents(trained_on, name.string());
        const Shard* shard = nullptr;
        const Shard* first = nullptr;
        // A file of that name that is not a shard (the report's relative path, read from another
        // directory, can name anything) holds none of the run's rows: the next candidate may.
        std::optional<Error> unreadable;
        for (const std::string& c : candidates) {
            std::error_code ec;
            if (!fs::is_regular_file(c, ec)) continue;
            const Shard* s = nullptr;
            try {
                s = &open(c);
            } catch (const Error& e) {
                if (!unreadable) unreadable = e;
                continue;
            }
            if (!first) first = s;
            if (recorded.empty() || recorded.count(content_of(*s))) {
                shard = s;
                break;
            }
        }
        if (!first && unreadable) throw *unreadable;
        if (!first)
            throw Error(report_path, "batch row " + std::to_string(i) + ": shard '" + r.shard +
                                         "' not found (nor a shard of that name beside the report or in --train-data)");
        if (!shard)
            throw Error(report_path, "batch row " + std::to_string(i) + ": shard '" + r.shard + "' is not the one the run trained on (" +
                                         first->path() + ": " + content_of(*first) + "; the run's: " + *recorded.begin() +
                                         "): the spike's rows are not in it; give --train-data the run's shard of that name");
        // The same tokens under --train-data (the data copied elsewhere, the report's path still
        // there) are that shard: a row goes on into the shard after it, and the baseline keeps
        // clear of the row.
        if (!starts.count(canonical(shard->path())))
            for (const Shard& s : data.shards())
                if (fs::path(s.path()).filename() == name && s.size() == shard->size() &&
                    s.tokens_hash() == shard->tokens_hash()) {
                    shard = &s;
                    break;
                }
        const std::string& path = shard->path();
        Row row{std::nullopt, std::vector<int32_t>(n)};
        const auto start = starts.find(canonical(path));
        if (start != starts.end()) row.at = start->second + r.offset;
        const bool within = r.offset <= shard->size() && shard->size() - r.offset >= n;
        if (!within && !(row.at && r.offset < shard->size() && *row.at + n <= data.size()))
            throw Error(report_path, "batch row " + std::to_string(i) + ": its " + std::to_string(n) + " tokens from offset " +
                                         std::to_string(r.offset) + " lie beyond the " + std::to_string(shard->size()) +
                                         " tokens of " + path +
                                         (row.at ? " and the shards after it in --train-data"
                                                 : " (a row goes on into the next shard of --train-data, and this shard is not one of them)"));
        // Shard::read, not the map: a shard truncated since it was opened is then an Error naming
        // it, not a SIGBUS.
        if (within)
            shard->read(r.offset, n, row.tokens.data());
        else
            data.read(*row.at, n, row.tokens.data());
        for (size_t t = 0; t < n; t++)
            if (row.tokens[t] < 0 || row.tokens[t] >= vocab)
                throw Error(path, "token " + std::to_string(static_cast<uint32_t>(row.tokens[t])) + " at position " +
                                      std::to_string(r.offset + t) + (within ? "" : " (counted on into the next shards)") +
                                      " is outside the model's vocabulary of " + std::to_string(vocab));
        rows.push_back(std::move(row));
    }
    return rows;
}

// Where a row of the baseline starts: a shard of the data and a token offset in it.
struct Place {
    size_t shard = 0;
    uint64_t offset = 0;
};

// `count` rows of seq_len + 1 tokens, each inside one shard of the data, drawn uniformly over
// all start positions by the seed, none overlapping a spike row.
std::vector<Place> other_rows(const TokenSet& data, const std::vector<Row>& spikes, size_t count, int seq_len, uint64_t seed) {
    const uint64_t n = static_cast<uint64_t>(seq_len) + 1;
    std::vector<uint64_t> starts;  // starts[i]: start positions in shards before i
    uint64_t total = 0, disjoint = 0;
    for (const Shard& s : data.shards()) {
        starts.push_back(total);
        total += s.size() >= n ? s.size() - n + 1 : 0;
        disjoint += s.size() / n;
    }
    if (total == 0)
        throw Error(data.pattern(), "no shard holds a row of " + std::to_string(n) + " tokens (seq_len + 1)");
    // Draws may repeat a row: data with fewer rows than the baseline draws repeats them, and a
    // baseline of copies has no spread of its own (one row makes every batch the same loss).
    const auto in_data = [](const Row& r) { return r.at.has_value(); };
    const uint64_t inside = static_cast<uint64_t>(std::count_if(spikes.begin(), spikes.end(), in_data));
    disjoint = disjoint > inside ? disjoint - inside : 0;
    if (disjoint < count)
        throw Error(data.pattern(), "holds " + std::to_string(disjoint) + " rows of " + std::to_string(n) +
                                        " tokens besides the spike rows, fewer than the " + std::to_string(count) +
                                        " the baseline draws (--other-batches x the spike's rows): give more data or "
                                        "fewer --other-batches");
    Rng rng(seed);
    std::vector<Place> out;
    constexpr int kTries = 1000;
    while (out.size() < count) {
        for (int tries = 0;; tries++) {
            if (tries == kTries)
                throw Error(data.pattern(), "found no row of " + std::to_string(n) + " tokens outside the spike rows in " +
                                                std::to_string(kTries) + " draws");
            const uint64_t pick = rng.below(total);
            // The last shard whose start positions begin at or before pick (empty shards add none).
            const size_t s = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), pick) - starts.begin()) - 1;
            const uint64_t off = pick - starts[s];
            const uint64_t at = data.start(s) + off;
            const bool overlaps = std::any_of(spikes.begin(), spikes.end(),
                                              [&](const Row& r) { return r.at && at < *r.at + n && *r.at < at + n; });
            if (overlaps) continue;
            out.push_back({s, off});
            break;
        }
    }
    return out;
}

// The baseline is other batches of the run's own data (train/data_identity.h: moved data still
// matches). Other shards make another baseline: said, not refused, since replaying against other
// data can be a question too.
void warn_if_other_data(const json& trained_on, const TokenSet& data) {
    const std::string change = data_change(trained_on, data_json(data));
    if (!change.empty())
        log_warn("--train-data " + data.pattern() + " is not the data the run trained on (" + change +
                 "): the baseline batches come from other data");
}

// The checkpoint --earlier-checkpoint leaves to us: the report's run.checkpoint_earlier, else
// the oldest complete checkpoint of the same run older than `ck`, beside it.
std::string find_earlier(const CheckpointReader& ck, const std::string& from_report, const std::string& report_path) {
    const fs::path dir = checkpoint_path(ck.dir());
    const std::string root = dir.has_parent_path() ? dir.parent_path().string() : ".";
    if (!from_report.empty()) {
        // The report names it relative to where the run was started: from elsewhere, or once
        // the run has moved, it is the checkpoint of that name beside --checkpoint.
        std::string named = from_report;
        fs::path name(from_report);
        if (!name.has_filename()) name = name.parent_path();
        std::error_code ec;
        if (!fs::is_directory(named, ec) && fs::is_directory(fs::path(root) / name.filename(), ec))
            named = (fs::path(root) / name.filename()).string();
        // The user did not type this path: say where it came from.
        if (!fs::is_directory(named, ec))
            throw Error(report_path + ": run.checkpoint_earlier", from_report + " is not there, nor a checkpoint of that name beside "
                                                                 "--checkpoint (pruned by --keep-last?): give --earlier-checkpoint");
        if (canonical(named) != canonical(ck.dir())) return named;
    }
    for (const CheckpointEntry& e : list_checkpoints(root))
        if (e.complete && e.run_id == ck.meta().run_id && e.step < ck.meta().step) return e.dir;
    throw Error("--earlier-checkpoint", "not given, the report names none (run.checkpoint_earlier), and " + root +
                                            " holds no complete checkpoint of this run older than step " +
                                            std::to_string(ck.meta().step));
}

struct Measured {
    std::vector<double> spike_rows;
    double spike = 0, others_mean = 0, others_std = 0;
};

double mean_of(const std::vector<double>& v, size_t begin, size_t end) {
    double s = 0;
    for (size_t i = begin; i < end; i++) s += v[i];
    return s / static_cast<double>(end - begin);
}

// Forward losses of every row through the parameters of `ck`; `others` holds batches of
// rows.size() rows each, in order.
Measured measure(GPT& model, MemoryBackend& mem, const CheckpointReader& ck, const std::vector<Row>& rows, const TokenSet& data,
                 const std::vector<Place>& others, int seq_len, const std::string& label) {
    const std::vector<char> params = restore_params(ck, model.layout());
    mem.copy_to_device(model.params(), params.data(), params.size());
    const size_t total = rows.size() + others.size();
    ProgressLine progress(static_cast<long long>(total));
    // Summed in double from the tokens' losses, as the trainer's report sums a row's: the same
    // number from the same state, not its rounding to float.
    auto loss = [&](const int32_t* tokens, size_t done) {
        if (progress.due(static_cast<long long>(done) + 1))
            progress.show(static_cast<long long>(done) + 1,
                          "replay " + label + ": row " + std::to_string(done + 1) + "/" + std::to_string(total));
        model.forward(tokens, tokens + 1, 1, seq_len);
        double sum = 0;
        for (float t : model.token_losses()) sum += t;
        return sum / seq_len;
    };
    // A non-finite loss stands above or below nothing: every comparison with it is false, and the
    // verdict would read "not_reproducible" from weights that cannot be measured.
    auto finite = [&](double l, const std::string& what) {
        if (!std::isfinite(l))
            throw Error(ck.dir(), "the loss of " + what + " through these weights is not finite (" + std::to_string(l) +
                                      "): nothing can be compared from this checkpoint (had the run diverged by then?)");
        return l;
    };
    Measured m;
    for (size_t i = 0; i < rows.size(); i++)
        m.spike_rows.push_back(finite(loss(rows[i].tokens.data(), i), "spike row " + std::to_string(i)));
    std::vector<double> other;
    std::vector<int32_t> buf(static_cast<size_t>(seq_len) + 1);
    for (size_t i = 0; i < others.size(); i++) {
        const Shard& sh = data.shards()[others[i].shard];
        sh.read(others[i].offset, buf.size(), buf.data());
        other.push_back(finite(loss(buf.data(), rows.size() + i),
                               "the baseline row at token " + std::to_string(others[i].offset) + " of " + sh.path()));
    }
    m.spike = mean_of(m.spike_rows, 0, m.spike_rows.size());
    const size_t R = rows.size(), N = others.size() / R;
    std::vector<double> batch;
    for (size_t b = 0; b < N; b++) batch.push_back(mean_of(other, b * R, (b + 1) * R));
    m.others_mean = mean_of(batch, 0, N);
    double var = 0;
    for (double x : batch) var += (x - m.others_mean) * (x - m.others_mean);
    m.others_std = std::sqrt(var / static_cast<double>(N - 1));
    return m;
}

json side(const CheckpointReader& ck, const Measured& m, const ReplayRule& rule) {
    const double threshold = spike_threshold(m.others_mean, m.others_std, rule);
    return {{"dir", ck.dir()},         {"step", ck.meta().step},         {"spike_loss", m.spike},
            {"row_losses", m.spike_rows}, {"others_mean", m.others_mean}, {"others_std", m.others_std},
            {"threshold", threshold},  {"spikes", m.spike > threshold}};
}

// The largest |replayed - the run's| loss of a spike row when `ck_step` is the state the spike's
// step started from and the report has the rows' losses; NaN otherwise.
double run_row_loss_diff(const SpikeReportRows& rep, int ck_step, const Measured& m) {
    if (ck_step != rep.step - 1) return std::numeric_limits<double>::quiet_NaN();
    double diff = 0;
    for (size_t i = 0; i < rep.rows.size(); i++) {
        if (!std::isfinite(rep.rows[i].loss)) return std::numeric_limits<double>::quiet_NaN();
        diff = std::max(diff, std::fabs(m.spike_rows[i] - rep.rows[i].loss));
    }
    return diff;
}

AttentionKind attention_of(const CheckpointReader& ck) {
    const json& c = ck.meta().config;
    if (c.is_object() && c.contains("attention") && c["attention"].is_string())
        return parse_attention(c["attention"].get<std::string>());
    return AttentionKind::flash;
}

}  // namespace

json replay_spike(const ReplayOptions& o) {
    constexpr int kMaxBatches = 100000;
    if (o.other_batches < 2 || o.other_batches > kMaxBatches)
        throw Error("--other-batches", "must be in [2, " + std::to_string(kMaxBatches) + "] (the baseline needs a spread), got " +
                                           std::to_string(o.other_batches));
    const SpikeReportRows rep = read_spike_report(o.spike_report);
    const CheckpointReader ck(o.checkpoint);
    const CheckpointMeta& meta = ck.meta();
    check_checkpoint_of_report(meta, ck.dir(), rep, o.spike_report);
    if (rep.seq_len > meta.model.max_seq_len)
        throw Error(ck.dir(), "the model's context of " + std::to_string(meta.model.max_seq_len) +
                                  " tokens is shorter than the spike report's seq_len of " + std::to_string(rep.seq_len) +
                                  " (" + o.spike_report + "): a checkpoint of another model");
    const std::string earlier = o.earlier_checkpoint.empty() ? find_earlier(ck, rep.checkpoint_earlier, o.spike_report) : o.earlier_checkpoint;
    const CheckpointReader early(earlier);
    if (early.meta().step >= meta.step) {
        // Name where the checkpoint came from: the flag, or the report's field when no flag was given.
        const bool from_report = o.earlier_checkpoint.empty();
        throw Error(from_report ? o.spike_report + ": run.checkpoint_earlier" : "--earlier-checkpoint",
                    early.dir() + " is at step " + std::to_string(early.meta().step) + ", not before --checkpoint's step " +
                        std::to_string(meta.step) + (from_report ? " (give --earlier-checkpoint an older one)" : ""));
    }
    if (early.meta().model.to_json() != meta.model.to_json() || early.meta().dtype != meta.dtype)
        throw Error(early.dir(), "holds another model (" + early.meta().model.describe() + ", " + early.meta().dtype +
                                     ") than --checkpoint " + ck.dir() + " (" + meta.model.describe() + ", " + meta.dtype + ")");
    // Another run's state, even of the same model, has seen other data in another order: the
    // ablation would compare two runs, not the batch against the state of one.
    if (early.meta().run_id != meta.run_id)
        throw Error(early.dir(), "is a checkpoint of another run (run id " + early.meta().run_id + ") than --checkpoint " +
                                     ck.dir() + " (run id " + meta.run_id + "): give an earlier checkpoint of the same run");

    const TokenSet data(o.train_data);
    data.check_vocab(meta.model.vocab_size);
    warn_if_other_data(meta.data, data);
    const std::vector<Row> rows = spike_rows(rep, o.spike_report, data, meta.data, meta.model.vocab_size);
    const std::vector<Place> others =
        other_rows(data, rows, rows.size() * static_cast<size_t>(o.other_batches), rep.seq_len, o.seed);

    Backend be = make_backend(o.device, parse_dtype(meta.dtype));
    ModelOptions mo;
    mo.attention = attention_of(ck);
    GPT model(meta.model, *be.ops, mo);
    const Measured now = measure(model, *be.memory, ck, rows, data, others, rep.seq_len, "checkpoint");
    const Measured then = measure(model, *be.memory, early, rows, data, others, rep.seq_len, "earlier checkpoint");

    // From a state that has learnt little every row costs about ln(vocab), so nothing can spike
    // there and (c) would read "interaction" whatever the rows hold.
    const double uniform = std::log(static_cast<double>(meta.model.vocab_size));
    if (then.others_mean > 0.9 * uniform)
        log_warn("the earlier checkpoint " + early.dir() + " has learnt little (baseline loss " + std::to_string(then.others_mean) +
                 " against ln(vocab) = " + std::to_string(uniform) + "): no batch can stand out from it; give a later one with "
                 "--earlier-checkpoint");
    const ReplayRule rule;
    if (now.others_mean > spike_threshold(rep.reference, 0, rule) && now.others_mean < then.others_mean)
        log_warn("from --checkpoint " + ck.dir() + " the other batches are above the run's loss before the spike, and "
                 "higher still from the earlier checkpoint: the run was still learning, so that is an older state, not a "
                 "damaged one; a checkpoint nearer the spike tells more");
    const double diff = run_row_loss_diff(rep, meta.step, now);
    if (diff > kReplayRowTolerance * now.spike)
        log_warn("--checkpoint " + ck.dir() + " is at the step before the spike, yet its losses of the spike rows are up to " +
                 std::to_string(diff) + " from the run's (" + o.spike_report + "): it is not the state the spike saw, or "
                 "these are not its rows (a checkpoint rewritten after a rollback? a resume with changes? an edited "
                 "report?); the verdict is of this state and these rows");
    const ReplayLosses l{now.spike, now.others_mean, now.others_std, then.spike, then.others_mean, then.others_std, rep.reference};
    return {{"verdict", replay_verdict(l, rule)},
            {"step", rep.step},
            {"rows", rows.size()},
            {"seq_len", rep.seq_len},
            {"other_batches", o.other_batches},
            {"seed", o.seed},
            {"device", be.device},
            {"rule", {{"sigmas", rule.sigmas}, {"margin", rule.margin}}},
            {"reference_loss", std::isnan(rep.reference) ? json() : json(rep.reference)},
            {"run_row_loss_diff", std::isnan(diff) ? json() : json(diff)},
            {"checkpoint", side(ck, now, rule)},
            {"earlier", side(early, then, rule)}};
}

}  // namespace sixnd
