#include "data/pipeline.h"

#include <fcntl.h>
#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <memory>
#include <unordered_map>

#include "core/error.h"
#include "core/hex.h"
#include "core/log.h"
#include "data/dedup_exact.h"
#include "data/doc_filter.h"
#include "data/doc_stream.h"
#include "data/langid.h"
#include "data/lsh.h"
#include "data/manifest.h"
#include "data/output.h"
#include "tokenizer/tokenizer.h"

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
};
constexpr uint32_t kNoSlot = UINT32_MAX;

// Progress on stderr every few seconds: documents, megabytes and the rate so far.
class Progress {
public:
    explicit Progress(std::string what) : what_(std::move(what)), start_(Clock::now()), last_(start_) {}
    void update(uint64_t docs, uint64_t bytes, bool done = false) {
        auto now = Clock::now();
        if (!done && std::chrono::duration<double>(now - last_).count() < 3) return;
        last_ = now;
        double s = std::max(1e-9, std::chrono::duration<double>(now - start_).count());
        char line[200];
        std::snprintf(line, sizeof line, "%s: %llu documents, %.1f MB, %.1f MB/s%s", what_.c_str(),
                      static_cast<unsigned long long>(docs), bytes / 1e6, bytes / 1e6 / s, done ? " (done)" : "");
        log_info(line);
    }

private:
    std::string what_;
    Clock::time_point start_, last_;
};

// The sibling directory the output is built in; removed unless the run reaches the end.
class ScratchDir {
public:
    explicit ScratchDir(std::string path) : path_(std::move(path)) {
        std::error_code ec;
        fs::remove_all(path_, ec);
        if (!fs::create_directory(path_, ec)) throw Error("--out", "cannot create " + path_ + ": " + ec.message());
    }
    ~ScratchDir() {
        std::error_code ec;
        if (!path_.empty()) fs::remove_all(path_, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;
    const std::string& path() const { return path_; }
    void release() { path_.clear(); }

private:
    std::string path_;
};

// A read-only map of a scratch file of uint32 values.
class MappedU32 {
public:
    explicit MappedU32(const std::string& path) {
        int fd = ::open(path.c_str(), O_RDONLY);
        if (fd < 0) throw Error(path, "cannot reopen scratch file");
        bytes_ = static_cast<size_t>(::lseek(fd, 0, SEEK_END));
        if (bytes_ > 0) {
            void* m = ::mmap(nullptr, bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
            if (m == MAP_FAILED) {
                ::close(fd);
                throw Error(path, "cannot map scratch file");
            }
            map_ = m;
        }
        ::close(fd);
    }
    ~MappedU32() {
        if (map_) ::munmap(map_, bytes_);
    }
    MappedU32(const MappedU32&) = delete;
    MappedU32& operator=(const MappedU32&) = delete;
    const uint32_t* data() const { return static_cast<const uint32_t*>(map_); }

private:
    void* map_ = nullptr;
    size_t bytes_ = 0;
};

uint64_t splitmix64(uint64_t& s) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Fisher-Yates with our own generator: std::shuffle's output differs between standard
// libraries, and the shards must not.
void shuffle(std::vector<uint32_t>& v, uint64_t seed) {
    for (size_t i = v.size(); i > 1; i--) {
        size_t j = static_cast<size_t>(splitmix64(seed) % i);
        std::swap(v[i - 1], v[j]);
    }
}

constexpr size_t kBatchDocs = 4096;
constexpr size_t kBatchBytes = 64 << 20;

class Pipeline {
public:
    explicit Pipeline(const PrepareOptions& o) : o_(o) {}
    nlohmann::json run();

private:
    void list_inputs();
    void scan(const FilterConfig& cfg, const std::string& sig_path);
    void deduplicate(const std::string& sig_path);
    void decontaminate();
    uint16_t intern(const std::string& reason);
    void spool(const Tokenizer& tok, TokenSpool& spool, const std::vector<uint8_t>& needed, std::vector<uint32_t>& spool_of);

    const PrepareOptions& o_;
    std::vector<InputFile> files_;
    std::vector<DocRec> docs_;
    std::vector<std::string> reasons_;
    std::unordered_map<std::string, uint16_t> reason_ids_;
    uint64_t repaired_ = 0;
    size_t slots_ = 0;
    double stage_seconds_[kFilterStages] = {};
    std::unique_ptr<Decontaminator> decon_;
};

uint16_t Pipeline::intern(const std::string& reason) {
    auto it = reason_ids_.find(reason);
    if (it != reason_ids_.end()) return it->second;
    if (reasons_.size() == UINT16_MAX) throw Error("--decontaminate", "too many distinct removal reasons (evaluation files)");
    reasons_.push_back(reason);
    return reason_ids_[reason] = static_cast<uint16_t>(reasons_.size() - 1);
}

void Pipeline::list_inputs() {
    for (size_t s = 0; s < o_.sources.size(); s++) {
        std::vector<std::string> paths;
        try {
            paths = list_source_files(o_.sources[s].pattern);
        } catch (const Error& e) {
            throw Error("--source " + o_.sources[s].name, e.what());
        }
        for (auto& p : paths) files_.push_back({s, p, "", 0, 0, 0, 0, 0, ""});
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
                     static_cast<int16_t>(v.eval_hit), v.fate};
            if (v.has_signature) {
                if (std::fwrite(v.signature.data(), sizeof(uint32_t), v.signature.size(), sig) != v.signature.size())
                    throw Error(sig_path, "write failed (disk full?)");
                r.slot = static_cast<uint32_t>(slots_++);
            }
            repaired_ += v.repaired;
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

    // A file skipped under --on-error skip counts as a whole: what it gave before the fault is withdrawn.
    const auto& scans = stream.scans();
    uint16_t why = intern("unreadable_file");
    for (auto& d : docs_)
        if (!scans[d.file].error.empty()) d.fate = kIngest, d.reason = why;
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
        MappedU32 sigs(sig_path);
        LshParams lp{o_.minhash.bands, o_.minhash.rows, o_.minhash_verify};
        auto rep = lsh_clusters(sigs.data(), slots_, active, lp);
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
void Pipeline::spool(const Tokenizer& tok, TokenSpool& spool, const std::vector<uint8_t>& needed,
                     std::vector<uint32_t>& spool_of) {
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
    DocStream stream(paths, o_.ingest, wanted);
    std::vector<std::string> batch, ahead, texts;
    std::vector<uint32_t> file_of, ahead_file_of, ids;
    std::vector<std::vector<uint32_t>> tokens;
    bool more = stream.next_batch(batch, file_of, kBatchDocs, kBatchBytes);
    while (more) {
        auto next = std::async(std::launch::async, [&] { return stream.next_batch(ahead, ahead_file_of, kBatchDocs, kBatchBytes); });
        texts.clear();
        ids.clear();
        for (size_t i = 0; i < batch.size(); i++) {
            const InputFile& f = files_[file_of[i]];
            size_t d = next_doc[file_of[i]]++;
            if (d >= f.first_doc + f.docs) throw Error(f.path, "changed while being prepared (more documents than in pass 1)");
            if (needed[d]) texts.push_back(std::move(batch[i])), ids.push_back(static_cast<uint32_t>(d));
        }
        tokens.assign(texts.size(), {});
#pragma omp parallel for schedule(dynamic, 4)
        for (size_t i = 0; i < texts.size(); i++) {
            clean_text(texts[i], o_.ingest.invalid_utf8);
            tokens[i] = tok.encode_ordinary(texts[i]);
        }
        for (size_t i = 0; i < texts.size(); i++) {
            if (texts[i].size() != docs_[ids[i]].bytes) throw Error(files_[docs_[ids[i]].file].path, "changed while being prepared");
            spool_of[ids[i]] = static_cast<uint32_t>(spool.append(tokens[i]));
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

nlohmann::json Pipeline::run() {
    auto t_start = Clock::now();
    if (o_.threads > 0) omp_set_num_threads(o_.threads);
    if (o_.sources.empty()) throw Error("--source", "at least one source is needed");
    for (size_t i = 0; i < o_.sources.size(); i++)
        for (size_t j = 0; j < i; j++)
            if (o_.sources[i].name == o_.sources[j].name) throw Error("--source", "source name '" + o_.sources[i].name + "' is used twice");

    // Everything that can be checked cheaply is checked before the long passes.
    std::string out = o_.out;
    while (out.size() > 1 && out.back() == '/') out.pop_back();
    if (out.empty()) throw Error("--out", "no output directory given");
    std::error_code ec;
    if (fs::exists(out, ec) && !o_.overwrite) throw Error("--out", out + " already exists (pass --overwrite to replace it)");
    Tokenizer tok = Tokenizer::load(o_.tokenizer);
    auto eot = tok.special_id(o_.eot);
    if (!eot) throw Error(o_.tokenizer, "has no special token '" + o_.eot + "' (see --eot)");
    FilterConfig cfg;
    cfg.invalid_utf8 = o_.ingest.invalid_utf8;
    cfg.langid = o_.langid;
    if (o_.langid) cfg.langs = parse_languages(o_.langs);
    cfg.min_lang_confidence = o_.min_lang_confidence;
    cfg.quality = o_.quality ? &o_.quality_opts : nullptr;
    cfg.repetition = o_.repetition ? &o_.repetition_opts : nullptr;
    MinHasher hasher(o_.minhash);
    cfg.minhash = o_.dedup_near ? &hasher : nullptr;
    list_inputs();
    if (!o_.decontaminate.empty()) {
        std::vector<std::string> eval_files;
        for (const auto& pattern : o_.decontaminate) {
            auto paths = list_source_files(pattern);
            eval_files.insert(eval_files.end(), paths.begin(), paths.end());
        }
        IngestOptions eval_ingest = o_.ingest;
        eval_ingest.on_error = OnError::fail;
        decon_ = std::make_unique<Decontaminator>(eval_files, o_.decontaminate_ngram, eval_ingest);
        cfg.decontaminator = decon_.get();
        log_info("decontamination: " + std::to_string(decon_->ngram_count()) + " distinct " +
                 std::to_string(o_.decontaminate_ngram) + "-grams from " + std::to_string(eval_files.size()) + " file(s)");
    }

    ScratchDir scratch(out + ".partial-" + std::to_string(::getpid()));
    const std::string sig_path = scratch.path() + "/signatures.tmp";
    const std::string spool_path = scratch.path() + "/tokens.tmp";

    auto t0 = Clock::now();
    scan(cfg, sig_path);
    double t_scan = seconds_since(t0);
    if (docs_.empty()) throw Error("--source", "the inputs hold no documents (empty files?)");
    t0 = Clock::now();
    deduplicate(sig_path);
    decontaminate();
    double t_dedup = seconds_since(t0);
    std::error_code ignore;
    fs::remove(sig_path, ignore);

    // Ledger per stage: a document passes every stage before its fate and is removed at it.
    std::vector<StageCount> stages(kFilterStages);
    for (int s = 0; s < kFilterStages; s++) stages[s].name = stage_name(s);
    std::map<std::string, uint64_t> lang_counts;
    for (const auto& d : docs_) {
        for (int s = 0; s < d.fate; s++) stages[s].pass(d.bytes);
        if (d.fate < kKept) stages[d.fate].remove(d.bytes, reasons_[d.reason]);
        if (d.lang >= 0) lang_counts[language_code(d.lang)]++;
    }

    // Validation split by document, then mixing weights on the training side only.
    std::vector<uint8_t> is_val(docs_.size(), 0), needed(docs_.size(), 0);
    std::vector<uint32_t> copies(docs_.size(), 0);
    size_t kept = 0, val_count = 0;
    uint64_t best_key_doc = 0;
    double best_key = 2;
    const uint64_t val_seed = o_.seed ^ 0x76616c6964ull;
    for (size_t d = 0; d < docs_.size(); d++) {
        if (docs_[d].fate != kKept) continue;
        kept++;
        double u = unit_hash(docs_[d].hash, val_seed);
        if (u < o_.val_fraction) is_val[d] = 1, val_count++;
        if (u < best_key) best_key = u, best_key_doc = d;
    }
    if (kept == 0) {
        for (const auto& s : stages) log_info(s.name + ": " + std::to_string(s.docs_in) + " in, " + std::to_string(s.docs_removed) + " removed");
        throw Error("--source", "every document was removed by the filters; nothing to write (see the counts above)");
    }
    // A small corpus still gets a validation document whenever one was asked for.
    if (o_.val_fraction > 0 && val_count == 0 && kept >= 2) is_val[best_key_doc] = 1, val_count = 1;

    struct SourceMix {
        uint64_t docs_in = 0, docs_dropped = 0, copies = 0, bytes_in = 0, bytes_out = 0, tokens = 0;
    };
    std::vector<SourceMix> mix(o_.sources.size());
    StageCount mixing;
    mixing.name = "mixing";
    for (size_t d = 0; d < docs_.size(); d++) {
        if (docs_[d].fate != kKept) continue;
        if (is_val[d]) {
            needed[d] = 1;
            continue;
        }
        size_t s = files_[docs_[d].file].source;
        copies[d] = mix_copies(o_.sources[s].weight, docs_[d].hash, o_.seed);
        needed[d] = copies[d] > 0;
        mix[s].docs_in++;
        mix[s].bytes_in += docs_[d].bytes;
        mix[s].copies += copies[d];
        mix[s].bytes_out += copies[d] * docs_[d].bytes;
        if (copies[d] == 0) {
            mix[s].docs_dropped++;
            mixing.remove(docs_[d].bytes, "downsampled_" + o_.sources[s].name);
        } else {
            mixing.pass(docs_[d].bytes);
        }
    }
    if (kept - val_count == 0 || std::all_of(copies.begin(), copies.end(), [](uint32_t c) { return c == 0; }))
        throw Error("--source", "no training documents are left after the validation split and mixing weights");

    t0 = Clock::now();
    TokenSpool spooled(spool_path);
    std::vector<uint32_t> spool_of(docs_.size(), UINT32_MAX);
    spool(tok, spooled, needed, spool_of);
    double t_tokenize = seconds_since(t0);

    t0 = Clock::now();
    ShardWriter val_writer(scratch.path(), "val", o_.shard_tokens, *eot);
    ShardWriter train_writer(scratch.path(), "train", o_.shard_tokens, *eot);
    std::vector<uint32_t> order;
    for (size_t d = 0; d < docs_.size(); d++) {
        size_t n = 0;
        if (is_val[d]) {
            const uint32_t* t = spooled.doc(spool_of[d], n);
            val_writer.add_document(t, n);
        }
        for (uint32_t c = 0; c < copies[d]; c++) order.push_back(static_cast<uint32_t>(d));
    }
    if (o_.shuffle) shuffle(order, o_.seed);
    for (uint32_t d : order) {
        size_t n = 0;
        const uint32_t* t = spooled.doc(spool_of[d], n);
        train_writer.add_document(t, n);
        mix[files_[docs_[d].file].source].tokens += n + 1;
    }
    val_writer.finish();
    train_writer.finish();
    double t_shards = seconds_since(t0);
    fs::remove(spool_path, ignore);

    nlohmann::json m;
    m["format"] = "sixnd data manifest";
    m["version"] = 1;
    m["config"] = o_.config;
    m["tokenizer"] = {{"path", o_.tokenizer}, {"hash", tok.hash()}, {"vocab_size", tok.vocab_size()},
                      {"eot", {{"token", o_.eot}, {"id", *eot}}}};
    auto& inputs = m["inputs"] = nlohmann::json::array();
    for (const auto& f : files_) {
        nlohmann::json j = {{"source", o_.sources[f.source].name}, {"path", f.path}, {"documents", f.docs}};
        if (f.error.empty()) {
            j["format"] = f.format;
            j["bytes"] = f.bytes;
            j["xxh3_64"] = hex64(f.hash);
            if (f.broken_lines) j["broken_lines_skipped"] = f.broken_lines;
        } else {
            j["skipped"] = f.error;
        }
        inputs.push_back(j);
    }
    auto& st = m["stages"] = nlohmann::json::array();
    const bool enabled[kFilterStages] = {true, o_.langid, o_.quality, o_.repetition, o_.dedup_exact, o_.dedup_near, decon_ != nullptr};
    for (int s = 0; s < kFilterStages; s++) {
        auto j = stages[s].to_json();
        j["enabled"] = enabled[s];
        if (s == kIngest) j["invalid_utf8_repaired"] = repaired_;
        if (s == kLangid) j["languages"] = lang_counts;
        if (s == kDecontaminate && decon_) {
            j["ngram"] = o_.decontaminate_ngram;
            j["evaluation_files"] = decon_->files();
            j["evaluation_passages_too_short"] = decon_->short_passages();
        }
        st.push_back(j);
    }
    m["split"] = {{"val_fraction", o_.val_fraction}, {"val_documents", val_count}, {"train_documents", kept - val_count}};
    auto mj = mixing.to_json();
    mj["note"] = "training documents only; weight = copies of each document, repeats counted in copies_out";
    auto& per = mj["sources"] = nlohmann::json::array();
    for (size_t s = 0; s < o_.sources.size(); s++)
        per.push_back({{"source", o_.sources[s].name}, {"weight", o_.sources[s].weight}, {"documents_in", mix[s].docs_in},
                       {"documents_dropped", mix[s].docs_dropped}, {"copies_out", mix[s].copies},
                       {"repeated_copies", mix[s].copies - (mix[s].docs_in - mix[s].docs_dropped)},
                       {"bytes_in", mix[s].bytes_in}, {"bytes_out", mix[s].bytes_out}, {"tokens_out", mix[s].tokens}});
    m["mixing"] = mj;
    auto split_json = [](const ShardWriter& w) {
        nlohmann::json j = {{"documents", w.documents()}, {"tokens", w.tokens()}};
        auto& sh = j["shards"] = nlohmann::json::array();
        for (const auto& s : w.shards()) sh.push_back({{"file", s.file}, {"tokens", s.tokens}, {"tokens_xxh3_64", hex64(s.hash)}});
        return j;
    };
    m["output"] = {{"shard_tokens", o_.shard_tokens}, {"train", split_json(train_writer)}, {"val", split_json(val_writer)}};
    write_json(scratch.path() + "/manifest.json", m);

    if (fs::exists(out, ec)) {
        std::string old = out + ".old-" + std::to_string(::getpid());
        fs::rename(out, old, ec);
        if (ec) throw Error("--out", "cannot move the old " + out + " aside: " + ec.message());
        fs::rename(scratch.path(), out, ec);
        fs::remove_all(old, ignore);
    } else {
        fs::rename(scratch.path(), out, ec);
    }
    if (ec) throw Error("--out", "cannot rename " + scratch.path() + " to " + out + ": " + ec.message());
    scratch.release();

    for (const auto& s : stages)
        log_info(s.name + ": " + std::to_string(s.docs_in) + " in, " + std::to_string(s.docs_in - s.docs_removed) + " kept, " +
                 std::to_string(s.docs_removed) + " removed");
    log_info("wrote " + std::to_string(train_writer.shards().size()) + " train shard(s) (" + std::to_string(train_writer.tokens()) +
             " tokens) and " + std::to_string(val_writer.shards().size()) + " val shard(s) (" +
             std::to_string(val_writer.tokens()) + " tokens) to " + out);
    nlohmann::json timing = {{"threads", omp_get_max_threads()}, {"pass1_s", t_scan}, {"dedup_s", t_dedup},
                             {"tokenize_s", t_tokenize}, {"shards_s", t_shards}, {"total_s", seconds_since(t_start)}};
    for (int s = 0; s < kFilterStages; s++) timing[std::string(stage_name(s)) + "_thread_s"] = stage_seconds_[s];
    log_info("timing " + timing.dump());
    return m;
}

}  // namespace

nlohmann::json prepare(const PrepareOptions& opts) { return Pipeline(opts).run(); }

}  // namespace sixnd::data
