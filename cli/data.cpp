// sixnd data prepare: raw text files -> filtered, deduplicated, decontaminated, mixed llm.c
// token shards and a manifest. Every stage can be switched off and every threshold is a flag;
// the defaults are the published ones (Gopher rules, FineWeb's MinHash).
#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "cli/uint64_flag.h"
#include "cli/verbs.h"
#include "core/error.h"
#include "core/log.h"
#include "data/langid.h"
#include "data/pipeline.h"

namespace sixnd::cli {

namespace {

// Flags that arrive as text (or as "--no-X" switches) before they become PrepareOptions.
struct RawFlags {
    std::vector<std::string> sources;
    std::string format = "auto", on_error = "fail", invalid_utf8 = "repair";
    std::string top_ngram = "2:0.2,3:0.18,4:0.16", dup_ngram = "5:0.15,6:0.14,7:0.13,8:0.12,9:0.11,10:0.1";
    bool no_langid = false, no_quality = false, no_repetition = false, no_dedup_exact = false, no_dedup_near = false,
         no_shuffle = false;
};

void add_prepare_flags(CLI::App& p, data::PrepareOptions& o, RawFlags& r) {
    p.add_option("--source", r.sources, "NAME=GLOB[:WEIGHT]: files or directories (recursive) of one source; repeatable")
        ->required();
    p.add_option("--tokenizer", o.tokenizer, "sixnd tokenizer file")->required();
    p.add_option("--out", o.out, "output directory (built beside it, renamed into place at the end)")->required();
    p.add_flag("--overwrite", o.overwrite, "replace --out if it is an earlier output of data prepare (nothing else is ever replaced)");
    p.add_option("--threads", o.threads, "worker threads (0: all cores)")->capture_default_str();

    p.add_option("--format", r.format, "input format: auto (JSONL by extension, fortune if it has '%' lines, else text), text, jsonl, fortune")
        ->capture_default_str();
    p.add_option("--jsonl-field", o.ingest.jsonl_field, "JSONL field holding the text")->capture_default_str();
    p.add_option("--on-error", r.on_error, "unreadable file or broken JSONL line: fail or skip")->capture_default_str();
    p.add_option("--invalid-utf8", r.invalid_utf8, "invalid UTF-8: repair (U+FFFD) or drop the document")->capture_default_str();

    p.add_flag("--no-langid", r.no_langid, "keep every language");
    p.add_option("--langs", o.langs, "languages to keep (CLD2 codes, comma-separated; un: text CLD2 cannot name)")->capture_default_str();
    p.add_option("--min-lang-confidence", o.min_lang_confidence, "share of the text CLD2 gives the language, 0..1")
        ->capture_default_str();

    auto& q = o.quality_opts;
    p.add_flag("--no-quality", r.no_quality, "skip the Gopher quality rules");
    p.add_option("--min-words", q.min_words, "Gopher: fewest words")->capture_default_str();
    p.add_option("--max-words", q.max_words, "Gopher: most words")->capture_default_str();
    p.add_option("--min-mean-word-length", q.min_mean_word_length, "Gopher")->capture_default_str();
    p.add_option("--max-mean-word-length", q.max_mean_word_length, "Gopher")->capture_default_str();
    p.add_option("--max-symbol-word-ratio", q.max_symbol_word_ratio, "Gopher: ('#' + ellipses) per word")->capture_default_str();
    p.add_option("--max-bullet-lines", q.max_bullet_lines, "Gopher: share of lines starting with a bullet")->capture_default_str();
    p.add_option("--max-ellipsis-lines", q.max_ellipsis_lines, "Gopher: share of lines ending in an ellipsis")->capture_default_str();
    p.add_option("--min-alpha-words", q.min_alpha_words, "Gopher: share of words holding a letter")->capture_default_str();
    p.add_option("--min-stop-words", q.min_stop_words, "Gopher: fewest English stop words")->capture_default_str();

    auto& rep = o.repetition_opts;
    p.add_flag("--no-repetition", r.no_repetition, "skip the Gopher repetition rules");
    p.add_option("--max-dup-line-frac", rep.max_dup_line_frac, "Gopher: duplicate lines, by count")->capture_default_str();
    p.add_option("--max-dup-para-frac", rep.max_dup_para_frac, "Gopher: duplicate paragraphs, by count")->capture_default_str();
    p.add_option("--max-dup-line-char-frac", rep.max_dup_line_char_frac, "Gopher: duplicate lines, by characters")->capture_default_str();
    p.add_option("--max-dup-para-char-frac", rep.max_dup_para_char_frac, "Gopher: duplicate paragraphs, by characters")->capture_default_str();
    p.add_option("--top-ngram-fracs", r.top_ngram, "Gopher: N:MAX share of characters in the most frequent n-gram")->capture_default_str();
    p.add_option("--dup-ngram-fracs", r.dup_ngram, "Gopher: N:MAX share of characters in repeated n-grams")->capture_default_str();

    p.add_flag("--no-dedup-exact", r.no_dedup_exact, "skip exact deduplication (MinHash still removes exact copies, unless --no-dedup-near)");
    p.add_flag("--no-dedup-near", r.no_dedup_near, "skip MinHash near-duplicate removal");
    p.add_option("--minhash-ngram", o.minhash.ngram, "words per shingle")->capture_default_str();
    p.add_option("--minhash-bands", o.minhash.bands, "LSH bands")->capture_default_str();
    p.add_option("--minhash-rows", o.minhash.rows, "rows per band")->capture_default_str();
    p.add_option("--minhash-verify", o.minhash_verify,
                 "merge an LSH candidate pair only if its signature Jaccard estimate reaches this (0: merge all, as FineWeb)")
        ->capture_default_str();

    p.add_option("--decontaminate", o.decontaminate, "evaluation files (globs, directories): drop documents sharing an n-gram");
    p.add_option("--decontaminate-ngram", o.decontaminate_ngram, "words per decontamination n-gram")->capture_default_str();

    p.add_option("--val-fraction", o.val_fraction, "share of documents held out for validation")->capture_default_str();
    p.add_option("--shard-tokens", o.shard_tokens, "tokens per shard")->capture_default_str();
    p.add_option("--eot", o.eot, "special token written before every document")->capture_default_str();
    p.add_flag("--no-shuffle", r.no_shuffle, "keep training documents in input order");
    p.add_option("--seed", o.seed, "seed for MinHash, the split, mixing and the shuffle")
        ->capture_default_str()
        ->check(uint64_value());
}

void check_options(const data::PrepareOptions& o) {
    // NaN fails every comparison, so a NaN threshold would silently switch its rule off: each
    // check is written so that NaN fails it.
    auto fraction = [](double v, const char* flag) {
        SIXND_CHECK(v >= 0 && v <= 1, flag, "must be between 0 and 1, not " + std::to_string(v));
    };
    auto count = [](double v, const char* flag) {
        SIXND_CHECK(v >= 0 && std::isfinite(v), flag, "must be a finite number >= 0, not " + std::to_string(v));
    };
    fraction(o.min_lang_confidence, "--min-lang-confidence");
    fraction(o.val_fraction, "--val-fraction");
    fraction(o.minhash_verify, "--minhash-verify");
    const auto& q = o.quality_opts;
    count(q.min_words, "--min-words");
    count(q.max_words, "--max-words");
    SIXND_CHECK(q.min_words <= q.max_words, "--min-words/--max-words", "the minimum is above the maximum");
    count(q.min_mean_word_length, "--min-mean-word-length");
    count(q.max_mean_word_length, "--max-mean-word-length");
    SIXND_CHECK(q.min_mean_word_length <= q.max_mean_word_length, "--min-mean-word-length/--max-mean-word-length",
                "the minimum is above the maximum");
    count(q.max_symbol_word_ratio, "--max-symbol-word-ratio");
    fraction(q.max_bullet_lines, "--max-bullet-lines");
    fraction(q.max_ellipsis_lines, "--max-ellipsis-lines");
    fraction(q.min_alpha_words, "--min-alpha-words");
    count(q.min_stop_words, "--min-stop-words");
    const auto& r = o.repetition_opts;
    fraction(r.max_dup_line_frac, "--max-dup-line-frac");
    fraction(r.max_dup_para_frac, "--max-dup-para-frac");
    fraction(r.max_dup_line_char_frac, "--max-dup-line-char-frac");
    fraction(r.max_dup_para_char_frac, "--max-dup-para-char-frac");
    SIXND_CHECK(!o.ingest.jsonl_field.empty(), "--jsonl-field", "must name a field");
    SIXND_CHECK(o.val_fraction < 1, "--val-fraction", "must leave some training documents (below 1)");
    SIXND_CHECK(o.minhash.ngram >= 1 && o.minhash.ngram <= 64, "--minhash-ngram", "must be 1..64");
    // In 64 bits: an int product of two large factors wraps (65536 x 65536 is 0) and would pass.
    const int64_t bands = o.minhash.bands, rows = o.minhash.rows;
    SIXND_CHECK(bands >= 1 && bands <= 1024 && rows >= 1 && rows <= 1024 && bands * rows <= 1024, "--minhash-bands/--minhash-rows",
                "must be positive with bands x rows at most 1024, not " + std::to_string(bands) + " x " + std::to_string(rows));
    SIXND_CHECK(o.decontaminate_ngram >= 1 && o.decontaminate_ngram <= 64, "--decontaminate-ngram", "must be 1..64");
    SIXND_CHECK(o.shard_tokens >= 1 && o.shard_tokens <= 2147483647ull, "--shard-tokens", "must be 1..2^31-1 (llm.c's int32 count)");
    SIXND_CHECK(o.threads >= 0 && o.threads <= 1024, "--threads", "must be 0 (all cores) to 1024, not " + std::to_string(o.threads));
}

// A threshold of a stage that is switched off changes nothing; the user who gave both is told.
void warn_unused(const CLI::App& p, data::InputFormat format) {
    const std::pair<const char*, std::vector<const char*>> stages[] = {
        {"--no-langid", {"--langs", "--min-lang-confidence"}},
        {"--no-quality",
         {"--min-words", "--max-words", "--min-mean-word-length", "--max-mean-word-length", "--max-symbol-word-ratio",
          "--max-bullet-lines", "--max-ellipsis-lines", "--min-alpha-words", "--min-stop-words"}},
        {"--no-repetition",
         {"--max-dup-line-frac", "--max-dup-para-frac", "--max-dup-line-char-frac", "--max-dup-para-char-frac",
          "--top-ngram-fracs", "--dup-ngram-fracs"}},
        {"--no-dedup-near", {"--minhash-ngram", "--minhash-bands", "--minhash-rows", "--minhash-verify"}},
    };
    for (const auto& [off, flags] : stages)
        if (p.count(off))
            for (const char* flag : flags)
                if (p.count(flag)) log_warn(std::string(flag) + " has no effect with " + off);
    if (p.count("--decontaminate-ngram") && !p.count("--decontaminate"))
        log_warn("--decontaminate-ngram has no effect without --decontaminate");
    if (p.count("--jsonl-field") && (format == data::InputFormat::text || format == data::InputFormat::fortune))
        log_warn(std::string("--jsonl-field has no effect with --format ") + data::format_name(format));
}

}  // namespace

int run_data(int argc, char** argv) {
    CLI::App app{"Raw text -> filtered, deduplicated, decontaminated, mixed llm.c token shards", "sixnd data"};
    app.require_subcommand(1);
    CLI::App* prep = app.add_subcommand("prepare", "run the data pipeline and write shards and manifest.json");
    data::PrepareOptions o;
    RawFlags r;
    add_prepare_flags(*prep, o, r);
    check_subcommand(app, argc, argv);
    if (!parse_flags(app, argc, argv)) return 0;
    // An empty n-gram list turns those rules off; any other flag given empty is a script's unset
    // variable (--tokenizer "" read as the current directory).
    refuse_empty_values(app, {"--top-ngram-fracs", "--dup-ngram-fracs"});

    o.langid = !r.no_langid;
    o.quality = !r.no_quality;
    o.repetition = !r.no_repetition;
    o.dedup_exact = !r.no_dedup_exact;
    o.dedup_near = !r.no_dedup_near;
    o.shuffle = !r.no_shuffle;
    for (const auto& s : r.sources) o.sources.push_back(data::parse_source(s));
    o.ingest.format = data::parse_format(r.format);
    const std::string& on_error = r.on_error;
    const std::string& invalid_utf8 = r.invalid_utf8;
    SIXND_CHECK(on_error == "fail" || on_error == "skip", "--on-error", "must be fail or skip, not '" + on_error + "'");
    o.ingest.on_error = on_error == "skip" ? data::OnError::skip : data::OnError::fail;
    SIXND_CHECK(invalid_utf8 == "repair" || invalid_utf8 == "drop", "--invalid-utf8", "must be repair or drop, not '" + invalid_utf8 + "'");
    o.ingest.invalid_utf8 = invalid_utf8 == "drop" ? data::InvalidUtf8::drop : data::InvalidUtf8::repair;
    o.repetition_opts.top_ngram = data::parse_ngram_thresholds("--top-ngram-fracs", r.top_ngram);
    o.repetition_opts.dup_ngram = data::parse_ngram_thresholds("--dup-ngram-fracs", r.dup_ngram);
    if (o.langid) data::parse_languages(o.langs);  // an unknown code fails here, before any work
    o.minhash.seed = o.seed;
    check_options(o);
    warn_unused(*prep, o.ingest.format);

    // The resolved flags go into the manifest; --threads, --out and --overwrite are left out
    // because they do not change the shards.
    nlohmann::json cfg;
    for (const CLI::Option* opt : prep->get_options()) {
        if (opt == prep->get_help_ptr() || opt->get_lnames().empty()) continue;
        const std::string& name = opt->get_lnames()[0];
        if (name == "threads" || name == "out" || name == "overwrite") continue;
        if (opt->get_expected_max() == 0) {  // a switch: was it given?
            cfg[name] = opt->count() > 0;
            continue;
        }
        auto values = opt->count() ? opt->reduced_results() : std::vector<std::string>{opt->get_default_str()};
        if (opt->get_items_expected_max() > 1) {
            cfg[name] = opt->count() ? values : std::vector<std::string>{};
            continue;
        }
        // Numbers as numbers, so the manifest reads naturally; whole numbers exactly, so that a
        // seed above 2^63 reads back as the seed the run used. A text flag stays text, whatever
        // it spells ("--eot inf" is not infinity).
        const std::string& text = values.at(0);
        if (number_kind(*opt) == NumberKind::none) {
            cfg[name] = text;
            continue;
        }
        const char* end = text.data() + text.size();
        uint64_t u = 0;
        int64_t i = 0;
        char* real_end = nullptr;
        if (auto whole = std::from_chars(text.data(), end, u); whole.ec == std::errc() && whole.ptr == end)
            cfg[name] = u;
        else if (auto negative = std::from_chars(text.data(), end, i); negative.ec == std::errc() && negative.ptr == end)
            cfg[name] = i;
        else if (double r = std::strtod(text.c_str(), &real_end); !text.empty() && real_end == end)
            cfg[name] = r;
        else
            cfg[name] = text;
    }
    o.config = cfg;
    data::prepare(o);
    return 0;
}

}  // namespace sixnd::cli
