// The merge loop. Each distinct pre-token is a "word" with a count; each adjacent pair of
// symbols has a total count and the list of words it occurs in. A merge visits only the words
// that hold its pair and adjusts the counts of the pairs around each occurrence, and a max-heap
// with lazy deletion finds the next pair: entries are never updated in place, but a popped
// entry whose count is out of date is pushed back with the current one. Pair counts only fall,
// except for pairs containing the new token, which are pushed afresh after each merge, so
// every pair's newest entry is never below its true count and the first entry popped that is
// up to date is the true maximum.
#include "tokenizer/bpe_trainer.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "core/error.h"
#include "core/log.h"
#include "tokenizer/flat_map.h"
#include "tokenizer/pretokenizer.h"

namespace sixnd {
namespace {

using bpe::pair_key;
using bpe::pair_left;
using bpe::pair_right;

constexpr uint32_t kNone = ~uint32_t(0);

struct PairStat {
    int64_t count = 0;
    std::vector<uint32_t> words;  // may hold words that lost the pair; checked on use
};

struct HeapEntry {
    int64_t count;
    uint64_t pair;
};

class Trainer {
public:
    Trainer(const PretokenCounts& counts, size_t max_token_bytes) : max_token_bytes_(max_token_bytes), pair_index_(1 << 16) {
        tokens_.reserve(1 << 16);
        for (int b = 0; b < 256; b++) {
            tokens_.emplace_back(1, static_cast<char>(b));
            ids_.emplace(tokens_.back(), b);
        }
        counts.for_each([&](std::string_view piece, uint64_t n) {
            offsets_.push_back(syms_.size());
            lengths_.push_back(static_cast<uint32_t>(piece.size()));
            word_counts_.push_back(static_cast<int64_t>(n));
            for (unsigned char c : piece) syms_.push_back(c);
        });
        for (uint32_t w = 0; w < lengths_.size(); w++) {
            const uint32_t* s = &syms_[offsets_[w]];
            for (uint32_t i = 0; i + 1 < lengths_[w]; i++) add(s[i], s[i + 1], word_counts_[w], w);
        }
        for (size_t i = 0; i < stats_.size(); i++)
            if (fits(pair_of_[i])) heap_.push_back({stats_[i].count, pair_of_[i]});
        std::make_heap(heap_.begin(), heap_.end(), less());
    }

    // Finds the most frequent pair (ties: see Less); false when no pair is left.
    bool next(uint32_t* left, uint32_t* right, int64_t* count) {
        while (!heap_.empty()) {
            std::pop_heap(heap_.begin(), heap_.end(), less());
            HeapEntry e = heap_.back();
            heap_.pop_back();
            int64_t current = stats_[*pair_index_.find(e.pair)].count;
            if (current != e.count) {
                if (current > 0) push(current, e.pair);
                continue;
            }
            if (current <= 0) continue;
            *left = pair_left(e.pair);
            *right = pair_right(e.pair);
            *count = current;
            return true;
        }
        return false;
    }

    // Joins (a, b) everywhere; returns the id of the joined token. Two different merges can
    // spell the same bytes ("ab"+"c", "a"+"bc"); the second then reuses the first's id.
    uint32_t merge(uint32_t a, uint32_t b) {
        auto [it, fresh] = ids_.emplace(tokens_[a] + tokens_[b], static_cast<uint32_t>(tokens_.size()));
        const uint32_t c = it->second;
        if (fresh) tokens_.push_back(it->first);
        const uint32_t idx = *pair_index_.find(pair_key(a, b));
        std::vector<uint32_t> words = std::move(stats_[idx].words);
        stats_[idx].words = {};
        std::sort(words.begin(), words.end());
        words.erase(std::unique(words.begin(), words.end()), words.end());
        touched_.clear();
        for (uint32_t w : words) merge_in_word(w, a, b, c);
        std::sort(touched_.begin(), touched_.end());
        touched_.erase(std::unique(touched_.begin(), touched_.end()), touched_.end());
        for (uint64_t p : touched_) {
            int64_t n = stats_[*pair_index_.find(p)].count;
            if (n > 0) push(n, p);
        }
        return c;
    }
    size_t vocab_size() const { return tokens_.size(); }

    std::vector<std::string> take_tokens() { return std::move(tokens_); }
    const std::string& token(uint32_t id) const { return tokens_[id]; }

private:
    // Heap order: higher count first; equal counts go to the lexicographically greater pair of
    // byte strings (compared as unsigned bytes, left token first).
    struct Less {
        const std::vector<std::string>* tokens;
        bool operator()(const HeapEntry& x, const HeapEntry& y) const {
            if (x.count != y.count) return x.count < y.count;
            const std::string& xa = (*tokens)[pair_left(x.pair)];
            const std::string& ya = (*tokens)[pair_left(y.pair)];
            int c = xa.compare(ya);
            if (c != 0) return c < 0;
            return (*tokens)[pair_right(x.pair)].compare((*tokens)[pair_right(y.pair)]) < 0;
        }
    };
    Less less() const { return Less{&tokens_}; }

    // A pair too long to merge never enters the heap: token lengths never change, so it never
    // becomes mergeable, and its counts are still kept for the pairs around it.
    bool fits(uint64_t pair) const {
        return max_token_bytes_ == 0 || tokens_[pair_left(pair)].size() + tokens_[pair_right(pair)].size() <= max_token_bytes_;
    }
    void push(int64_t count, uint64_t pair) {
        if (!fits(pair)) return;
        heap_.push_back({count, pair});
        std::push_heap(heap_.begin(), heap_.end(), less());
    }

    PairStat& stat(uint32_t a, uint32_t b) {
        bool inserted = false;
        uint32_t& idx = pair_index_.get(pair_key(a, b), &inserted);
        if (inserted) {
            idx = static_cast<uint32_t>(stats_.size());
            stats_.emplace_back();
            pair_of_.push_back(pair_key(a, b));
        }
        return stats_[idx];
    }
    void add(uint32_t a, uint32_t b, int64_t n, uint32_t word) {
        PairStat& s = stat(a, b);
        s.count += n;
        if (s.words.empty() || s.words.back() != word) s.words.push_back(word);
    }
    void sub(uint32_t a, uint32_t b, int64_t n) { stat(a, b).count -= n; }

    // Rewrites word w with every non-overlapping (a, b), left to right, joined into c. Only the
    // pairs touching an occurrence change: (x, a) becomes (x, c) and (b, y) becomes (c, y); when
    // two occurrences are adjacent ("a b a b"), the (b, a) between them becomes (c, c), handled
    // once, by the second occurrence.
    void merge_in_word(uint32_t w, uint32_t a, uint32_t b, uint32_t c) {
        uint32_t* s = &syms_[offsets_[w]];
        const uint32_t n = lengths_[w];
        const int64_t k = word_counts_[w];
        uint32_t out = 0, last_original = kNone;
        for (uint32_t i = 0; i < n;) {
            if (i + 1 < n && s[i] == a && s[i + 1] == b) {
                sub(a, b, k);
                if (out > 0) {
                    sub(last_original, a, k);
                    add(s[out - 1], c, k, w);
                    touched_.push_back(pair_key(s[out - 1], c));
                }
                if (i + 2 < n) {
                    uint32_t y = s[i + 2];
                    bool next_is_occurrence = y == a && i + 3 < n && s[i + 3] == b;
                    if (!next_is_occurrence) {
                        sub(b, y, k);
                        add(c, y, k, w);
                        touched_.push_back(pair_key(c, y));
                    }
                }
                s[out++] = c;
                last_original = b;
                i += 2;
            } else {
                last_original = s[i];
                s[out++] = s[i];
                i += 1;
            }
        }
        lengths_[w] = out;
    }

    size_t max_token_bytes_;
    std::vector<std::string> tokens_;
    std::unordered_map<std::string, uint32_t> ids_;
    std::vector<uint32_t> syms_;  // every word's symbols, back to back
    std::vector<uint64_t> offsets_;
    std::vector<uint32_t> lengths_;
    std::vector<int64_t> word_counts_;
    bpe::FlatMap<uint32_t> pair_index_;  // pair -> index into stats_
    std::vector<PairStat> stats_;
    std::vector<uint64_t> pair_of_;
    std::vector<HeapEntry> heap_;
    std::vector<uint64_t> touched_;
};

std::string shown(const std::string& bytes) {
    std::string out;
    for (unsigned char ch : bytes) out += (ch >= 0x20 && ch < 0x7F) ? static_cast<char>(ch) : '?';
    return out;
}

// Pieces of one byte are not counted, so no counts means no pair to merge anywhere: empty
// files, or nothing but lone characters and special tokens. Training on that would write the
// bare bytes, not the vocabulary asked for. Input of nothing but whitespace (Unicode's, no-break
// and ideographic spaces too) is refused as well: its merges would only join runs of spaces and
// newlines, never a piece of text, so a file of blank lines (a wrong path, a failed extraction)
// would pass for a corpus. A caller holding out a file's tail trains on a range of it, and then
// the text may all be in the held-out part: that is said, rather than calling the files empty or
// textless. Only files of no bytes at all are guessed to be empty.
Error no_text(const std::vector<InputRange>& inputs, bool only_whitespace, uint64_t trained) {
    std::vector<std::string> paths;
    uint64_t whole = 0;  // the files' sizes: more than was trained on when part is held out
    for (const auto& r : inputs) {
        std::string name = input_name(r.path);
        if (std::find(paths.begin(), paths.end(), name) != paths.end()) continue;
        paths.push_back(std::move(name));
        struct stat st;
        if (r.path != "-" && ::stat(r.path.c_str(), &st) == 0) whole += static_cast<uint64_t>(st.st_size);
    }
    const bool one = paths.size() == 1;
    const bool held_out = whole > trained;
    const std::string what = only_whitespace ? "only whitespace, no text to learn merges from"
                                             : "no text to learn merges from";
    std::string hint;
    if (held_out && trained == 0)
        hint = ": all of " + std::string(one ? "its " : "their ") + std::to_string(whole) + " bytes are held out";
    else if (!only_whitespace)
        hint = trained == 0 ? (one ? " (an empty file?)" : " (empty files?)")
                            : " (only single characters and special tokens)";
    if (held_out && trained > 0)
        hint += " in the " + std::to_string(trained) + " of " + (one ? "its " : "their ") + std::to_string(whole) +
                " bytes trained on (the rest is held out)";
    if (one) return Error(paths[0], "holds " + what + hint);
    std::string where;
    for (size_t i = 0; i < paths.size() && i < 3; i++) where += (i ? ", " : "") + paths[i];
    if (paths.size() > 3) where += " and " + std::to_string(paths.size() - 3) + " more";
    return Error(where, "the inputs hold " + what + hint);
}

bool only_whitespace(const PretokenCounts& counts) {
    bool text = false;
    counts.for_each([&](std::string_view piece, uint64_t) { text = text || !white_space_only(piece); });
    return !text;
}

}  // namespace

Tokenizer train_bpe_from_counts(const PretokenCounts& counts, const BpeTrainOptions& opt) {
    const size_t floor = 256 + opt.specials.size();
    SIXND_CHECK(opt.vocab_size >= floor, "vocab size",
                std::to_string(opt.vocab_size) + " is below the 256 byte tokens plus " +
                    std::to_string(opt.specials.size()) + " special token(s) = " + std::to_string(floor));
    const size_t want = opt.vocab_size - opt.specials.size();  // bytes + merged tokens
    auto start = std::chrono::steady_clock::now();
    Trainer trainer(counts, opt.max_token_bytes);
    if (opt.progress)
        log_info("pairs counted for " + std::to_string(counts.size()) + " distinct pre-tokens; merging");
    TokenizerSpec spec;
    spec.pattern = opt.pattern;
    double last_report = 0;
    while (trainer.vocab_size() < want) {
        uint32_t a, b;
        int64_t count;
        if (!trainer.next(&a, &b, &count)) {
            log_warn("the training text has no pairs left to merge after " + std::to_string(spec.merges.size()) +
                     " merges; the vocabulary has " + std::to_string(trainer.vocab_size() + opt.specials.size()) +
                     " tokens, not " + std::to_string(opt.vocab_size) +
                     (opt.max_token_bytes ? " (no token longer than " + std::to_string(opt.max_token_bytes) + " bytes is made)" : ""));
            break;
        }
        uint32_t c = trainer.merge(a, b);
        spec.merges.emplace_back(a, b);
        if (opt.progress) {
            double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (secs - last_report >= 2.0 || trainer.vocab_size() == want) {
                last_report = secs;
                log_info("merge " + std::to_string(spec.merges.size()) + ", vocabulary " +
                         std::to_string(trainer.vocab_size()) + "/" + std::to_string(want) + ": '" +
                         shown(trainer.token(c)) + "' (count " + std::to_string(count) + "), " +
                         std::to_string(secs) + " s");
            }
        }
    }
    spec.tokens = trainer.take_tokens();
    for (const auto& s : opt.specials) {
        spec.specials.emplace_back(s, static_cast<uint32_t>(spec.tokens.size()));
        spec.tokens.push_back(s);
    }
    return Tokenizer::from_spec(std::move(spec), "trained tokenizer");
}

Tokenizer train_bpe(const std::vector<InputRange>& inputs, const BpeTrainOptions& opt) {
    const size_t floor = 256 + opt.specials.size();
    SIXND_CHECK(opt.vocab_size >= floor, "vocab size",
                std::to_string(opt.vocab_size) + " is below the 256 byte tokens plus " +
                    std::to_string(opt.specials.size()) + " special token(s) = " + std::to_string(floor));
    CountOptions co;
    co.pattern = opt.pattern;
    co.specials = opt.specials;
    co.threads = opt.threads;
    co.chunk_bytes = opt.chunk_bytes;
    co.progress = opt.progress;
    uint64_t bytes = 0;
    PretokenCounts counts = count_pretokens(inputs, co, &bytes);
    if (counts.size() == 0) throw no_text(inputs, false, bytes);
    if (only_whitespace(counts)) throw no_text(inputs, true, bytes);
    return train_bpe_from_counts(counts, opt);
}

}  // namespace sixnd
