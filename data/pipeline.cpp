#include "data/pipeline.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <cstdio>
#include <filesystem>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <unordered_map>

#include "core/error.h"
#include "core/hex.h"
#include "core/log.h"
#include "core/mapped_file.h"
#include "core/printable.h"
#include "core/rng.h"
#include "data/dedup_exact.h"
#include "data/doc_filter.h"
#include "data/doc_stream.h"
#include "data/langid.h"
#include "data/lsh.h"
#include "data/manifest.h"
#include "data/output.h"
#include "data/prepare_out.h"
#include "data/shard.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace sixnd::data {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct InputFile {
    size_t source;
    std::string path;
    std::string format;
    uint64_t bytes = 0, hash = 0, docs = 0, broken_lines = 0;
    size_t first_doc = 0;
    std::string error;  // set when the file was skipped under --on-error skip
};

// What the first pass keeps of a document: no text, 32 bytes.
struct DocRec {
    uint64_t hash;
    uint64_t bytes;
    uint32_t file;
    uint32_t slot;  // row in the signature file, or kNoSlot
    uint16_t reason;
    int16_t lang;
    int16_t eval_hit;
    uint8_t fate;
    uint8_t repaired;  // invalid UTF-8 was replaced
};
static_assert(sizeof(DocRec) == 32, "a record per input document: keep it small");
constexpr uint32_t kNoSlot = UINT32_MAX;

// Progress on stderr every few seconds, and once at the end: documents, and either megabytes and
// the rate so far or the steps of a stage that reads no bytes.
class Progress {
public:
    explicit Progress(std::string what) : what_(std::move(what)), start_(Clock::now()), last_(start_) {}
    void update(uint64_t docs, uint64_t bytes, bool done = false) {
        if (!due(done)) return;
        const double s = std::max(1e-9, std::chrono::duration<double>(last_ - start_).count());
        char line[200];
        std::snprintf(line, sizeof line, "%s: %llu documents, %.1f MB, %.1f MB/s%s", what_.c_str(),
                      static_cast<unsigned long long>(docs), bytes / 1e6, bytes / 1e6 / s, done ? " (done)" : "");
        log_info(line);
    }
    void update_steps(uint64_t docs, int step, int steps, const char* unit) {
        const bool done = step == steps;
        if (!due(done)) return;
        char line[200];
        std::snprintf(line, sizeof line, "%s: %llu documents, %s %d/%d, %.1f s%s", what_.c_str(),
                      static_cast<unsigned long long>(docs), unit, step, steps,
                      std::chrono::duration<double>(last_ - start_).count(), done ? " (done)" : "");
        log_info(line);
    }

private:
    bool due(bool done) {
        const auto now = Clock::now();
        if (!done && std::chrono::duration<double>(now - last_).count() < 3) return false;
        last_ = now;
        return true;
    }

    std::string what_;
    Clock::time_point start_, last_;
};

constexpr size_t kBatchDocs = 4096;
constexpr size_t kBatchBytes = 64 << 20;

// What mixing did to one source's training documents.
struct SourceMix {
    uint64_t docs_in = 0, docs_dropped = 0, copies = 0, bytes_in = 0, bytes_out = 0, tokens = 0;
};

// Seconds per part of the run, for the closing timing line.
struct Timing {
    double scan = 0, dedup = 0, tokenize = 0, shards = 0;
};

// One method per stage, in the order run() calls them; the members are what flows between them.
class Pipeline {
public:
    explicit Pipeline(const PrepareOptions& o) : o_(o) {}
    nlohmann::json run();

private:
    void check_flags();
    void check_output();
    void load_tokenizer();
    FilterConfig filter_config(const MinHasher& hasher);
    void list_inputs();
    void load_decontaminator(FilterConfig& cfg);
    void scan(const FilterConfig& cfg, const std::string& sig_path);
    void deduplicate(const std::string& sig_path);
    void decontaminate();
    void count_stages();
    void split_validation();
    void mix();
    uint16_t intern(const std::string& reason);
    void spool(TokenSpool& spool);
    void write_shards(const TokenSpool& spool, ShardWriter& val, ShardWriter& train);
    nlohmann::json manifest(const ShardWriter& val, const ShardWriter& train) const;
    void report(const ShardWriter& val, const ShardWriter& train, const Timing& t, Clock::time_point start) const;

    const PrepareOptions& o_;
    std::string out_;  // --out without trailing slashes
    std::unique_ptr<Tokenizer> tok_;
    uint32_t eot_ = 0;
    std::vector<InputFile> files_;
    std::vector<DocRec> docs_;
    std::vector<std::string> reasons_;
    std::unordered_map<std::string, uint16_t> reason_ids_;
    uint64_t repaired_ = 0;
    size_t slots_ = 0;
    double stage_seconds_[kFilterStages] = {};
    std::unique_ptr<Decontaminator> decon_;

    std::vector<StageCount> stages_;
    std::map<std::string, uint64_t> lang_counts_;
    size_t kept_ = 0, val_count_ = 0;
    std::vector<uint8_t> is_val_, needed_;
    std::vector<uint32_t> copies_, spool_of_;
    std::vector<SourceMix> mix_;
    StageCount mixing_;
};

// manifest.json is JSON, which holds only UTF-8: a name it cannot record is refused before the
// work, not when the manifest is written at the end. (Recording an escaped form instead would
// make the manifest name a file that does not exist.)
void require_utf8(const std::string& where, const char* what, const std::string& text) {
    if (!valid_utf8(text))
        throw Error(where, std::string(what) + " '" + printable(text) + "' is not valid UTF-8, which manifest.json cannot record");
}

uint16_t Pipeline::intern(const std::string& reason) {
    auto it = reason_ids_.find(reason);
    if (it != reason_ids_.end()) return it->second;
    if (reasons_.size() == UINT16_MAX) throw Error("--decontaminate", "too many distinct removal reasons (evaluation files)");
    reasons_.push_back(reason);
    return reason_ids_[reason] = static_cast<uint16_t>(reasons_.size() - 1);
}

void Pipeline::list_inputs() {
    // A file in two sources would be read twice, under two weights: refused (list_source_files
    // already reads a file reached by two names within one source once).
    std::map<std::string, size_t> source_of;
    for (size_t s = 0; s < o_.sources.size(); s++) {
        std::vector<std::string> paths;
        try {
            paths = list_source_files(o_.sources[s].pattern);
        } catch (const Error& e) {
            throw Error("--source " + o_.sources[s].name, e.what());
        }
        // An empty directory would leave the source out of the mix without a word.
        if (paths.empty())
            throw Error("--source " + o_.sources[s].name, o_.sources[s].pattern + ": holds no files, so the source would add nothing");
        for (auto& p : paths) {
            require_utf8("--source " + o_.sources[s].name, "file name", p);
            std::error_code ec;
            const fs::path real = fs::canonical(p, ec);
            auto [it, fresh] = source_of.emplace(ec ? p : real.string(), s);
            if (!fresh)
                throw Error("--source " + o_.sources[s].name, p + " is also in --source " + o_.sources[it->second].name +
                                                                   "; a file may belong to one source only");
            files_.push_back({s, p, "", 0, 0, 0, 0, 0, ""});
        }
    }
}

// First pass: every document once, through the filters; keeps records and signatures only.
void Pipeline::scan(const FilterConfig& cfg, const std::string& sig_path) {
    std::unique_ptr<FILE, int (*)(FILE*)> sig_file(cfg.minhash ? std::fopen(sig_path.c_str(), "wb") : nullptr, &std::fclose);
    FILE* sig = sig_file.get();
    if (cfg.minhash && !sig) throw Error(sig_path, "cannot create scratch file");
    Progress progress("pass 1/3 (filter)");
    uint64_t total_bytes = 0;
    std::vector<std::string> paths;
    for (const auto& f : files_) paths.push_back(f.path);
    DocStream stream(paths, o_.ingest);
    std::vector<std::string> batch, ahead;
    std::vector<uint32_t> file_of, ahead_file_of;
    std::vector<DocVerdict> verdicts;
    bool more = stream.next_batch(batch, file_of, kBatchDocs, kBatchBytes);
    while (more) {
        // The next batch is read (and decompressed) while this one is filtered.
        auto next = std::async(std::launch::async, [&] { return stream.next_batch(ahead, ahead_file_of, kBatchDocs, kBatchBytes); });
        verdicts.assign(batch.size(), DocVerdict{});
#pragma omp parallel for schedule(dynamic, 4)
        for (size_t i = 0; i < batch.size(); i++) filter_document(batch[i], cfg, verdicts[i]);
        for (size_t i = 0; i < verdicts.size(); i++) {
            const DocVerdict& v = verdicts[i];
            DocRec r{v.hash, v.bytes, file_of[i], kNoSlot, intern(v.reason), static_cast<int16_t>(v.lang),
                     static_cast<int16_t>(v.eval_hit), v.fate, v.repaired};
            if (v.has_signature) {
                if (std::fwrite(v.signature.data(), sizeof(uint32_t), v.signature.size(), sig) != v.signature.size())
                    throw Error(sig_path, "write failed (disk full?)");
                r.slot = static_cast<uint32_t>(slots_++);
            }
            for (int s = 0; s < kFilterStages; s++) stage_seconds_[s] += v.seconds[s];
            docs_.push_back(r);
            total_bytes += v.raw_bytes;
        }
        progress.update(docs_.size(), total_bytes);
        more = next.get();
        batch.swap(ahead);
        file_of.swap(ahead_file_of);
    }
    progress.update(docs_.size(), total_bytes, true);
    if (sig && std::fclose(sig_file.release()) != 0) throw Error(sig_path, "write failed (disk full?)");

    // A file skipped under --on-error skip counts as a whole: what it gave before the fault is
    // withdrawn, repairs included.
    const auto& scans = stream.scans();
    uint16_t why = intern("unreadable_file");
    for (auto& d : docs_)
        if (!scans[d.file].error.empty()) d.fate = kIngest, d.reason = why, d.repaired = 0;
    for (size_t i = 0; i < files_.size(); i++) {
        files_[i].format = scans[i].format;
        files_[i].bytes = scans[i].bytes;
        files_[i].hash = scans[i].hash;
        files_[i].broken_lines = scans[i].broken_lines;
        files_[i].error = scans[i].error;
    }
    for (size_t d = docs_.size(); d-- > 0;) {
        InputFile& f = files_[docs_[d].file];
        f.first_doc = d;
        f.docs++;
    }
    if (docs_.empty()) {
        // Under --on-error skip the files need not be empty: say which it was.
        const auto skipped = std::count_if(files_.begin(), files_.end(), [](const InputFile& f) { return !f.error.empty(); });
        if (skipped == 0) throw Error("--source", "the inputs hold no documents (empty files?)");
        throw Error("--source", "the inputs hold no documents: " + std::to_string(skipped) + " of " + std::to_string(files_.size()) +
                                    " file(s) skipped as unreadable (see the warnings above), the rest empty");
    }
}

void Pipeline::deduplicate(const std::string& sig_path) {
    if (o_.dedup_exact) {
        std::vector<uint32_t> alive;
        std::vector<uint64_t> hashes;
        for (size_t d = 0; d < docs_.size(); d++)
            if (docs_[d].fate == kKept) alive.push_back(static_cast<uint32_t>(d)), hashes.push_back(docs_[d].hash);
        auto dup = exact_duplicates(hashes);
        uint16_t why = intern("duplicate");
        for (size_t i = 0; i < alive.size(); i++)
            if (dup[i]) docs_[alive[i]].fate = kDedupExact, docs_[alive[i]].reason = why;
    }
    if (o_.dedup_near && slots_ > 0) {
        std::vector<uint32_t> slot_doc(slots_);
        std::vector<bool> active(slots_);
        for (size_t d = 0; d < docs_.size(); d++)
            if (docs_[d].slot != kNoSlot) slot_doc[docs_[d].slot] = static_cast<uint32_t>(d), active[docs_[d].slot] = docs_[d].fate == kKept;
        MappedFile sigs(sig_path, "scratch file");
        LshParams lp{o_.minhash.bands, o_.minhash.rows, o_.minhash_verify};
        const uint64_t searched = std::count(active.begin(), active.end(), true);
        Progress progress("near-duplicate search");
        auto rep = lsh_clusters(reinterpret_cast<const uint32_t*>(sigs.data()), slots_, active, lp,
                                [&](int bands) { progress.update_steps(searched, bands, lp.bands, "band"); });
        uint16_t why = intern("near_duplicate");
        for (size_t s = 0; s < slots_; s++)
            if (active[s] && rep[s] != s) docs_[slot_doc[s]].fate = kDedupNear, docs_[slot_doc[s]].reason = why;
    }
}

void Pipeline::decontaminate() {
    if (!decon_) return;
    std::vector<uint16_t> why;
    for (const auto& f : decon_->files()) why.push_back(intern(f));
    for (auto& d : docs_)
        if (d.fate == kKept && d.eval_hit >= 0) d.fate = kDecontaminate, d.reason = why[d.eval_hit];
}

// Second pass: re-reads the inputs and tokenizes the documents that made it, in input order.
void Pipeline::spool(TokenSpool& spool) {
    const std::vector<uint8_t>& needed = needed_;
    spool_of_.assign(docs_.size(), UINT32_MAX);
    Progress progress("pass 2/3 (tokenize)");
    uint64_t done_docs = 0, done_bytes = 0;
    std::vector<std::string> paths;
    std::vector<bool> wanted(files_.size(), false);
    std::vector<size_t> next_doc(files_.size());
    for (size_t i = 0; i < files_.size(); i++) {
        const InputFile& f = files_[i];
        paths.push_back(f.path);
        next_doc[i] = f.first_doc;
        for (size_t d = f.first_doc; d < f.first_doc + f.docs && !wanted[i] && f.error.empty(); d++) wanted[i] = needed[d];
    }
    IngestOptions again = o_.ingest;
    again.report_skipped_lines = false;  // pass 1 warned of each
    again.broken_line_hint = "it was whole in pass 1";
    DocStream stream(paths, again, wanted);
    // Pass 1 read these files through: a fault now is a file changed since, which pass 1's advice
    // for a broken file (--on-error skip) would not mend.
    auto read_batch = [&](std::vector<std::string>& texts, std::vector<uint32_t>& of) {
        try {
            return stream.next_batch(texts, of, kBatchDocs, kBatchBytes);
        } catch (const Error& e) {
            throw Error(e.where(), "changed while being prepared: " + e.fault());
        }
    };
    std::vector<std::string> batch, ahead, texts;
    std::vector<uint32_t> file_of, ahead_file_of, ids;
    std::vector<std::vector<uint32_t>> tokens;
    bool more = read_batch(batch, file_of);
    while (more) {
        auto next = std::async(std::launch::async, [&] { return read_batch(ahead, ahead_file_of); });
        texts.clear();
        ids.clear();
        for (size_t i = 0; i < batch.size(); i++) {
            const InputFile& f = files_[file_of[i]];
            size_t d = next_doc[file_of[i]]++;
            if (d >= f.first_doc + f.docs) throw Error(f.path, "changed while being prepared (more documents than in pass 1)");
            if (needed[d]) texts.push_back(std::move(batch[i])), ids.push_back(static_cast<uint32_t>(d));
        }
        tokens.assign(texts.size(), {});
        std::exception_ptr failure;
#pragma omp parallel for schedule(dynamic, 4)
        for (size_t i = 0; i < texts.size(); i++) {
            try {
                clean_text(texts[i], o_.ingest.invalid_utf8);
                tokens[i] = tok_->encode_ordinary(texts[i]);
            } catch (const Error& e) {  // e.g. a custom pattern's match limit: name the document's file
#pragma omp critical
                failure = std::make_exception_ptr(Error(files_[docs_[ids[i]].file].path, e.what()));
            } catch (...) {
#pragma omp critical
                failure = std::current_exception();
            }
        }
        if (failure) std::rethrow_exception(failure);
        for (size_t i = 0; i < texts.size(); i++) {
            if (texts[i].size() != docs_[ids[i]].bytes) throw Error(files_[docs_[ids[i]].file].path, "changed while being prepared");
            spool_of_[ids[i]] = static_cast<uint32_t>(spool.append(tokens[i]));
            done_bytes += texts[i].size();
        }
        done_docs += texts.size();
        progress.update(done_docs, done_bytes);
        more = next.get();
        batch.swap(ahead);
        file_of.swap(ahead_file_of);
    }
    for (size_t i = 0; i < files_.size(); i++) {
        if (!wanted[i]) continue;
        const FileScan& sc = stream.scans()[i];
        if (!sc.error.empty()) throw Error(files_[i].path, "became unreadable while being prepared: " + sc.error);
        if (sc.hash != files_[i].hash || next_doc[i] != files_[i].first_doc + files_[i].docs)
            throw Error(files_[i].path, "changed while being prepared (content differs from pass 1)");
    }
    progress.update(done_docs, done_bytes, true);
    spool.finish();
}

void Pipeline::check_flags() {
    if (o_.threads > 0) omp_set_num_threads(o_.threads);
    if (o_.sources.empty()) throw Error("--source", "at least one source is needed");
    for (const auto& [key, value] : o_.config.items())
        for (const auto& v : value.is_array() ? value : nlohmann::json::array({value}))
            if (v.is_string()) require_utf8("--" + key, "value", v.get<std::string>());
    require_utf8("--tokenizer", "path", o_.tokenizer);
    require_utf8("--eot", "token", o_.eot);
    for (const auto& src : o_.sources) require_utf8("--source", "source name", src.name);
    for (size_t i = 0; i < o_.sources.size(); i++)
        for (size_t j = 0; j < i; j++)
            if (o_.sources[i].name == o_.sources[j].name) throw Error("--source", "source name '" + o_.sources[i].name + "' is used twice");
}

// --out may only be a directory an earlier run wrote, and must lie apart from every input:
// checked before any work, and before anything is created or removed. (An old output a killed
// run had moved aside is put back first: it is what the user had, and what the checks judge.)
void Pipeline::check_output() {
    out_ = o_.out;
    while (out_.size() > 1 && out_.back() == '/') out_.pop_back();
    if (out_.empty()) throw Error("--out", "no output directory given");
    // The output is built in a sibling named after --out, and the "sibling" of "." or ".." lies
    // inside it: refused here rather than when the finished output cannot be put in place.
    const std::string leaf = fs::path(out_).filename().string();
    if (leaf == "." || leaf == "..")
        throw Error("--out", out_ + " ends in '" + leaf + "'; name the output directory itself (e.g. ../data)");
    std::vector<NamedPath> inputs = {{"--tokenizer", o_.tokenizer}};
    auto add = [&](const std::string& what, const std::string& pattern) {
        try {
            for (auto& p : expand_glob(pattern)) inputs.push_back({what, p});
        } catch (const Error&) {  // a pattern matching nothing is reported where it is read
        }
    };
    for (const auto& s : o_.sources) add("--source " + s.name, s.pattern);
    for (const auto& d : o_.decontaminate) add("--decontaminate", d);
    check_no_overlap(out_, inputs);
    restore_moved_aside(out_);
    check_output_dir(out_, o_.overwrite);
    remove_stale_partials(out_);
}

void Pipeline::load_tokenizer() {
    tok_ = std::make_unique<Tokenizer>(Tokenizer::load(o_.tokenizer));
    auto eot = tok_->special_id(o_.eot);
    if (!eot) throw Error(o_.tokenizer, "has no special token '" + o_.eot + "' (see --eot)");
    eot_ = *eot;
}

FilterConfig Pipeline::filter_config(const MinHasher& hasher) {
    FilterConfig cfg;
    cfg.invalid_utf8 = o_.ingest.invalid_utf8;
    cfg.langid = o_.langid;
    if (o_.langid) cfg.langs = parse_languages(o_.langs);
    cfg.min_lang_confidence = o_.min_lang_confidence;
    cfg.quality = o_.quality ? &o_.quality_opts : nullptr;
    cfg.repetition = o_.repetition ? &o_.repetition_opts : nullptr;
    cfg.minhash = o_.dedup_near ? &hasher : nullptr;
    return cfg;
}

void Pipeline::load_decontaminator(FilterConfig& cfg) {
    if (o_.decontaminate.empty()) return;
    std::vector<std::string> eval_files;
    for (const auto& pattern : o_.decontaminate) {
        std::vector<std::string> paths;
        try {
            paths = list_source_files(pattern);
        } catch (const Error& e) {
            throw Error("--decontaminate", e.what());
        }
        if (paths.empty()) throw Error("--decontaminate", pattern + ": holds no files, so nothing would be decontaminated");
        for (const auto& p : paths) require_utf8("--decontaminate", "file name", p);
        eval_files.insert(eval_files.end(), paths.begin(), paths.end());
    }
    // A document records the file it hit in DocRec::eval_hit; an index past its range would wrap
    // negative and read as no hit, keeping contaminated documents.
    constexpr size_t kMaxEvalFiles = std::numeric_limits<decltype(DocRec::eval_hit)>::max();
    if (eval_files.size() > kMaxEvalFiles)
        throw Error("--decontaminate", std::to_string(eval_files.size()) + " evaluation files are more than " +
                                           std::to_string(kMaxEvalFiles) + "; join them into fewer files");
    // Evaluation files are read as what they are, whatever --format and --jsonl-field say of the
    // sources, and all their text counts: a benchmark's items hold it in fields of any name.
    IngestOptions eval_ingest = o_.ingest;
    eval_ingest.format = InputFormat::automatic;
    eval_ingest.jsonl_field.clear();
    eval_ingest.on_error = OnError::fail;
    eval_ingest.broken_line_hint = "evaluation files are read whole: --on-error does not apply to them";
    decon_ = std::make_unique<Decontaminator>(eval_files, o_.decontaminate_ngram, eval_ingest);
    if (decon_->ngram_count() == 0)
        throw Error("--decontaminate", "the evaluation files hold no passage of " + std::to_string(o_.decontaminate_ngram) +
                                           " words or more (see --decontaminate-ngram), so nothing would be decontaminated");
    cfg.decontaminator = decon_.get();
    log_info("decontamination: " + std::to_string(decon_->ngram_count()) + " distinct " +
             std::to_string(o_.decontaminate_ngram) + "-grams from " + std::to_string(eval_files.size()) + " file(s)");
}

// Ledger per stage: a document passes every stage before its fate and is removed at it.
void Pipeline::count_stages() {
    stages_.assign(kFilterStages, {});
    for (int s = 0; s < kFilterStages; s++) stages_[s].name = stage_name(s);
    for (const auto& d : docs_) {
        for (int s = 0; s < d.fate; s++) stages_[s].pass(d.bytes);
        if (d.fate < kKept) stages_[d.fate].remove(d.bytes, reasons_[d.reason]);
        repaired_ += d.repaired;
        // Only documents that reached language ID: a skipped file's were identified in pass 1,
        // then withdrawn at ingest.
        if (d.fate > kIngest && d.lang >= 0) lang_counts_[language_code(d.lang)]++;
    }
}

// Validation split by document, from a hash of its content (so it does not depend on order).
void Pipeline::split_validation() {
    is_val_.assign(docs_.size(), 0);
    uint64_t best_key_doc = 0;
    double best_key = 2;
    const uint64_t val_seed = o_.seed ^ 0x76616c6964ull;
    for (size_t d = 0; d < docs_.size(); d++) {
        if (docs_[d].fate != kKept) continue;
        kept_++;
        double u = unit_hash(docs_[d].hash, val_seed);
        if (u < o_.val_fraction) is_val_[d] = 1, val_count_++;
        if (u < best_key) best_key = u, best_key_doc = d;
    }
    if (kept_ == 0) {
        for (const auto& s : stages_)
            log_info(s.name + ": " + std::to_string(s.docs_in) + " in, " + std::to_string(s.docs_removed) + " removed");
        throw Error("--source", "every document was removed by the filters; nothing to write (see the counts above)");
    }
    // A small corpus still gets a validation document whenever one was asked for. Its copies
    // (the same words: exact dedup may be off) go with it, as the split above sends them, so no
    // text is on both sides; when they are all the documents there are, none is held out.
    if (o_.val_fraction <= 0 || val_count_ > 0) return;
    const uint64_t held = docs_[best_key_doc].hash;
    auto copy = [&](size_t d) { return docs_[d].fate == kKept && docs_[d].hash == held; };
    size_t copies = 0;
    for (size_t d = 0; d < docs_.size(); d++) copies += copy(d);
    if (copies == kept_) return;
    for (size_t d = 0; d < docs_.size(); d++)
        if (copy(d)) is_val_[d] = 1, val_count_++;
}

// Mixing weights, on the training side only: each document's number of copies.
void Pipeline::mix() {
    needed_.assign(docs_.size(), 0);
    copies_.assign(docs_.size(), 0);
    mix_.assign(o_.sources.size(), {});
    mixing_ = StageCount{};
    mixing_.name = "mixing";
    for (size_t d = 0; d < docs_.size(); d++) {
        if (docs_[d].fate != kKept) continue;
        if (is_val_[d]) {
            needed_[d] = 1;
            continue;
        }
        size_t s = files_[docs_[d].file].source;
        SourceMix& m = mix_[s];
        copies_[d] = mix_copies(o_.sources[s].weight, docs_[d].hash, o_.seed);
        needed_[d] = copies_[d] > 0;
        m.docs_in++;
        m.bytes_in += docs_[d].bytes;
        m.copies += copies_[d];
        m.bytes_out += copies_[d] * docs_[d].bytes;
        if (copies_[d] == 0) {
            m.docs_dropped++;
            mixing_.remove(docs_[d].bytes, "downsampled_" + o_.sources[s].name);
        } else {
            mixing_.pass(docs_[d].bytes);
        }
    }
    if (kept_ - val_count_ == 0 || std::all_of(copies_.begin(), copies_.end(), [](uint32_t c) { return c == 0; }))
        throw Error("--source", "no training documents are left after the validation split and mixing weights");
}

// Third pass: validation documents in input order, training copies in a seeded shuffle.
void Pipeline::write_shards(const TokenSpool& spooled, ShardWriter& val, ShardWriter& train) {
    std::vector<uint32_t> order;
    for (size_t d = 0; d < docs_.size(); d++) {
        size_t n = 0;
        if (is_val_[d]) {
            const uint32_t* t = spooled.doc(spool_of_[d], n);
            val.add_document(t, n);
        }
        for (uint32_t c = 0; c < copies_[d]; c++) order.push_back(static_cast<uint32_t>(d));
    }
    if (o_.shuffle) {
        Rng rng(o_.seed);
        shuffle(order, rng);
    }
    Progress progress("pass 3/3 (shards)");
    uint64_t done_bytes = 0;
    for (size_t i = 0; i < order.size(); i++) {
        const uint32_t d = order[i];
        size_t n = 0;
        const uint32_t* t = spooled.doc(spool_of_[d], n);
        train.add_document(t, n);
        mix_[files_[docs_[d].file].source].tokens += n + 1;
        done_bytes += docs_[d].bytes;
        progress.update(i + 1, done_bytes);
    }
    val.finish();
    train.finish();
    progress.update(order.size(), done_bytes, true);
}

nlohmann::json Pipeline::manifest(const ShardWriter& val, const ShardWriter& train) const {
    nlohmann::json m;
    m["format"] = "sixnd data manifest";
    m["version"] = 1;
    m["config"] = o_.config;
    m["tokenizer"] = {{"path", o_.tokenizer}, {"hash", tok_->hash()}, {"vocab_size", tok_->vocab_size()},
                      {"eot", {{"token", o_.eot}, {"id", eot_}}}};
    auto& inputs = m["inputs"] = nlohmann::json::array();
    for (const auto& f : files_) {
        nlohmann::json j = {{"source", o_.sources[f.source].name}, {"path", f.path}, {"documents", f.docs}};
        if (f.error.empty()) {
            j["format"] = f.format;
            j["bytes"] = f.bytes;
            j["xxh3_64"] = hex64(f.hash);
            if (f.broken_lines) j["broken_lines_skipped"] = f.broken_lines;
        } else {
            j["skipped"] = printable(f.error);  // a message, as the warning printed it
        }
        inputs.push_back(j);
    }
    auto& st = m["stages"] = nlohmann::json::array();
    const bool enabled[kFilterStages] = {true, o_.langid, o_.quality, o_.repetition, o_.dedup_exact, o_.dedup_near, decon_ != nullptr};
    for (int s = 0; s < kFilterStages; s++) {
        auto j = stages_[s].to_json();
        j["enabled"] = enabled[s];
        if (s == kIngest) j["invalid_utf8_repaired"] = repaired_;
        if (s == kLangid) j["languages"] = lang_counts_;
        if (s == kDecontaminate && decon_) {
            j["ngram"] = o_.decontaminate_ngram;
            j["evaluation_files"] = decon_->files();
            j["evaluation_passages_too_short"] = decon_->short_passages();
        }
        st.push_back(j);
    }
    m["split"] = {{"val_fraction", o_.val_fraction}, {"val_documents", val_count_}, {"train_documents", kept_ - val_count_}};
    auto mj = mixing_.to_json();
    mj["note"] = "training documents only; weight = copies of each document, repeats counted in copies_out";
    auto& per = mj["sources"] = nlohmann::json::array();
    for (size_t s = 0; s < o_.sources.size(); s++) {
        const SourceMix& x = mix_[s];
        per.push_back({{"source", o_.sources[s].name}, {"weight", o_.sources[s].weight}, {"documents_in", x.docs_in},
                       {"documents_dropped", x.docs_dropped}, {"copies_out", x.copies},
                       {"repeated_copies", x.copies - (x.docs_in - x.docs_dropped)},
                       {"bytes_in", x.bytes_in}, {"bytes_out", x.bytes_out}, {"tokens_out", x.tokens}});
    }
    m["mixing"] = mj;
    auto split_json = [](const ShardWriter& w) {
        nlohmann::json j = {{"documents", w.documents()}, {"tokens", w.tokens()}};
        auto& sh = j["shards"] = nlohmann::json::array();
        for (const auto& s : w.shards()) sh.push_back({{"file", s.file}, {"tokens", s.tokens}, {"tokens_xxh3_64", hex64(s.hash)}});
        return j;
    };
    m["output"] = {{"shard_tokens", o_.shard_tokens}, {"train", split_json(train)}, {"val", split_json(val)}};
    return m;
}

void Pipeline::report(const ShardWriter& val, const ShardWriter& train, const Timing& t, Clock::time_point start) const {
    for (const auto& s : stages_)
        log_info(s.name + ": " + std::to_string(s.docs_in) + " in, " + std::to_string(s.docs_in - s.docs_removed) + " kept, " +
                 std::to_string(s.docs_removed) + " removed");
    log_info("wrote " + std::to_string(train.shards().size()) + " train shard(s) (" + std::to_string(train.tokens()) +
             " tokens) and " + std::to_string(val.shards().size()) + " val shard(s) (" + std::to_string(val.tokens()) +
             " tokens) to " + out_);
    nlohmann::json timing = {{"threads", omp_get_max_threads()}, {"pass1_s", t.scan}, {"dedup_s", t.dedup},
                             {"tokenize_s", t.tokenize}, {"shards_s", t.shards}, {"total_s", seconds_since(start)}};
    for (int s = 0; s < kFilterStages; s++) timing[std::string(stage_name(s)) + "_thread_s"] = stage_seconds_[s];
    log_info("timing " + timing.dump());
}

nlohmann::json Pipeline::run() {
    const auto start = Clock::now();
    Timing t;
    // Everything that can be checked cheaply is checked before the long passes.
    check_flags();
    check_output();
    load_tokenizer();
    MinHasher hasher(o_.minhash);
    FilterConfig cfg = filter_config(hasher);
    list_inputs();
    load_decontaminator(cfg);

    PartialDir partial(out_);
    const std::string sig_path = partial.path() + "/signatures.tmp";
    const std::string spool_path = partial.path() + "/tokens.tmp";

    auto t0 = Clock::now();
    scan(cfg, sig_path);
    t.scan = seconds_since(t0);
    t0 = Clock::now();
    deduplicate(sig_path);
    decontaminate();
    t.dedup = seconds_since(t0);
    std::error_code ignore;
    fs::remove(sig_path, ignore);

    count_stages();
    split_validation();
    mix();

    t0 = Clock::now();
    TokenSpool spooled(spool_path);
    spool(spooled);
    t.tokenize = seconds_since(t0);

    t0 = Clock::now();
    ShardWriter val(partial.path(), "val", o_.shard_tokens, eot_, tok_->vocab_size());
    ShardWriter train(partial.path(), "train", o_.shard_tokens, eot_, tok_->vocab_size());
    write_shards(spooled, val, train);
    t.shards = seconds_since(t0);
    fs::remove(spool_path, ignore);

    nlohmann::json m = manifest(val, train);
    write_json(partial.path() + "/manifest.json", m);
    partial.commit(out_, o_.overwrite);
    report(val, train, t, start);
    return m;
}

}  // namespace

nlohmann::json prepare(const PrepareOptions& opts) { return Pipeline(opts).run(); }

}  // namespace sixnd::data
