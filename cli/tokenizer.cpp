// sixnd tokenizer train|encode|decode|import-gpt2|export-hf|info: byte-level BPE from the
// command line. Results go to stdout (ids, bytes, one JSON summary line); progress to stderr.
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string_view>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <utility>

#include "cli/verbs.h"
#include "core/byte_order_mark.h"
#include "core/error.h"
#include "core/log.h"
#include "data/shard.h"
#include "core/atomic_file.h"
#include "core/signal_block.h"
#include "tokenizer/bpe_trainer.h"
#include "tokenizer/chunk_reader.h"
#include "tokenizer/gpt2_import.h"
#include "tokenizer/hf_export.h"
#include "tokenizer/id_list.h"
#include "tokenizer/pretokenizer.h"
#include "core/read_file.h"
#include "tokenizer/stream_encoder.h"
#include "tokenizer/tokenizer_file.h"
#include "tokenizer/utf8.h"

namespace sixnd::cli {
namespace {

constexpr size_t kChunkBytes = size_t(4) << 20;
constexpr int kMaxThreads = 1024;  // far beyond any machine; larger counts only exhaust memory

uint64_t file_size(const std::string& path) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) throw Error(path, std::string("cannot open: ") + std::strerror(errno));
    SIXND_CHECK(!S_ISDIR(st.st_mode), path, "is a directory, not a file");
    return static_cast<uint64_t>(st.st_size);
}

// Logs what an encode has done every 2 s, so that a long one is seen to move; `total_bytes` is 0
// when unknown (stdin).
std::function<void(const EncodeStats&)> encode_progress(const std::string& what, uint64_t total_bytes) {
    return [what, total_bytes, last = 0.0](const EncodeStats& s) mutable {
        if (s.seconds - last < 2.0) return;
        last = s.seconds;
        const double mb = static_cast<double>(s.bytes) / 1e6;
        std::string line = what + ": " + std::to_string(static_cast<long>(mb));
        if (total_bytes > 0)
            line += " of " + std::to_string(static_cast<long>(static_cast<double>(total_bytes) / 1e6)) + " MB (" +
                    std::to_string(static_cast<int>(100.0 * static_cast<double>(s.bytes) / static_cast<double>(total_bytes))) +
                    "%)";
        else
            line += " MB";
        log_info(line + ", " + std::to_string(static_cast<long>(mb / s.seconds)) + " MB/s, " + std::to_string(s.tokens) +
                 " tokens");
    };
}

// Splits the inputs into a training part and a held-out tail of about `fraction` of the bytes
// (at most 16 MB: enough to measure compression). Every input keeps a training range, even an
// empty one, so that an error about the training text names them all. A file is split in two
// where split_place() says: a special token cut in half would be trained on as ordinary text,
// and merges learnt from its pieces.
void split_heldout(const std::vector<std::string>& files, double fraction, const std::vector<std::string>& specials,
                   std::vector<InputRange>* train, std::vector<InputRange>* heldout) {
    uint64_t total = 0;
    std::vector<uint64_t> sizes;
    for (const auto& f : files) total += sizes.emplace_back(file_size(f));
    std::vector<std::pair<std::string, uint32_t>> special_list;
    for (const auto& s : specials) special_list.emplace_back(s, 0);
    const SpecialTokens special_tokens(special_list);
    uint64_t hold = std::min<uint64_t>(static_cast<uint64_t>(static_cast<double>(total) * fraction), 16u << 20);
    for (size_t i = files.size(); i-- > 0;) {
        uint64_t take = std::min(hold, sizes[i]);
        hold -= take;
        if (take > 0 && take < sizes[i]) take = sizes[i] - split_place(files[i], sizes[i] - take, special_tokens);
        if (take > 0) heldout->insert(heldout->begin(), InputRange{files[i], sizes[i] - take, sizes[i]});
        train->insert(train->begin(), InputRange{files[i], 0, sizes[i] - take});
    }
}

// "-" is standard output where a verb can write there (encode, decode, export-hf); elsewhere a
// file named "-" is rarely what was meant.
void check_output_flag(const std::string& path, const std::string& flag) {
    SIXND_CHECK(path != "-", flag, "- (standard output) is not supported here: name a file (./- for one called -)");
}

// Training reads an input by its size, and its held-out tail a second time, which a pipe or a
// device cannot give. UTF-16 or UTF-32 text (by its byte order mark) is refused as `data
// prepare` refuses it: read as bytes, a NUL between every two letters leaves few pairs to merge,
// and training would write a vocabulary of those.
void check_train_input(const std::string& path, const std::string& flag) {
    SIXND_CHECK(path != "-", flag, "- (standard input) is not supported: training reads its input more than once");
    struct stat st;
    if (stat(path.c_str(), &st) != 0) throw Error(path, std::string("cannot open: ") + std::strerror(errno));
    SIXND_CHECK(S_ISREG(st.st_mode), path,
                std::string("is ") + file_kind(st.st_mode) + "; " + flag +
                    " must be a regular file, as training reads it more than once (save the text to a file first)");
    std::string head(4, '\0');
    head.resize(FileReader(path).read(head.data(), 0, head.size()));
    refuse_wide_text(head, path);
}

// With --input - the text is standard input; a tokenizer read from there first (/dev/stdin)
// would leave nothing to encode or decode, and the run would print an empty result.
void check_tokenizer_not_stdin(const std::string& tokenizer_path, const std::string& input) {
    struct stat tok, in;
    if (input != "-" || ::stat(tokenizer_path.c_str(), &tok) != 0 || ::fstat(0, &in) != 0) return;
    SIXND_CHECK(tok.st_dev != in.st_dev || tok.st_ino != in.st_ino, tokenizer_path,
                "is standard input, which --input - reads too: name the tokenizer's file");
}

// Outputs never replace what sixnd did not write (DESIGN.md): an existing, non-empty output must
// begin as the files this verb writes do, so that a user's text under that name is refused
// rather than overwritten. (decode's text output cannot be told from anyone's text and, like a
// shell's redirect, replaces a regular file.)
void check_earlier_output(const std::string& path, const char* flag, const char* kind,
                          const std::function<bool(std::string_view head)>& ours) {
    struct stat st;
    // A symlink or another kind is check_replaceable_file's to refuse.
    if (path.empty() || path == "-" || ::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) return;
    std::string head(256, '\0');
    head.resize(FileReader(path).read(head.data(), 0, head.size()));
    SIXND_CHECK(ours(head), path,
                std::string("exists and is not ") + kind + " sixnd wrote; " + flag +
                    " replaces only such a file: give a new name, or remove it first");
}

bool tokenizer_file(std::string_view head) { return head.find("\"format\": \"sixnd-tokenizer\"") != std::string_view::npos; }
// A token shard's first bytes: the llm.c magic of either width.
bool token_shard(std::string_view head) {
    int32_t magic = 0;
    if (head.size() >= sizeof magic) std::memcpy(&magic, head.data(), sizeof magic);
    return magic == kShardMagicU16 || magic == kShardMagicU32;
}

// --out and --hf-out (train, import-gpt2) are checked together before the work and written
// together after it.
void check_outputs(const std::string& out, const std::string& hf_out,
                   const std::vector<std::pair<std::string, std::string>>& inputs) {
    check_output_flag(out, "--out");
    check_replaceable_file(out);
    check_output_dir(out);
    if (!hf_out.empty()) {
        check_output_flag(hf_out, "--hf-out");
        check_replaceable_file(hf_out);
        check_output_dir(hf_out);
        check_not_same_output(hf_out, out, "--out");
    }
    for (const auto& [path, flag] : inputs) {
        check_not_same_file(out, path, flag);
        check_not_same_file(hf_out, path, flag);
    }
    check_earlier_output(out, "--out", "a tokenizer file", tokenizer_file);
    check_earlier_output(hf_out, "--hf-out", "a tokenizer.json", hf_tokenizer_json_head);
}

// tokenizer.json's text. Its fault (a special token written as it writes an ordinary one) names
// tokenizer.json but no file the user gave: `where` is that file (the --hf-out, the --tokenizer).
std::string hf_json(const Tokenizer& tok, const std::string& where) {
    try {
        return hf_tokenizer_json(tok);
    } catch (const Error& e) {
        throw Error(where, e.what());
    }
}

// Both files are whole on disk under temporary names before either is renamed into place, so a
// fault in either (a full disk, a directory gone) replaces neither, and SIGINT/SIGTERM/SIGHUP are
// held back across the two renames (core/signal_block.h). The sixnd tokenizer is renamed last:
// only SIGKILL in the moment between them can leave a new --hf-out beside the old --out, never a
// new --out whose --hf-out was not written.
void save_outputs(const Tokenizer& tok, const std::string& out, const std::string& hf_out) {
    AtomicFile tokenizer_file(out);
    tokenizer_file.write(tokenizer_file_text(tok.spec(), tok.hash()));
    tokenizer_file.sync();
    std::optional<AtomicFile> hf_file;
    if (!hf_out.empty()) {
        hf_file.emplace(hf_out);
        hf_file->write(hf_json(tok, hf_out));
        hf_file->sync();
    }
    SignalBlock block;
    if (hf_file) hf_file->commit();
    tokenizer_file.commit();
}

// Checked before the long work (Tokenizer::from_spec checks them too, after it): finding a fault
// after hours of merges wastes them. A special is stored as JSON text, so it must be UTF-8; and
// one byte is always an ordinary token, which the special would take the place of.
void check_specials(const std::vector<std::string>& specials) {
    for (size_t i = 0; i < specials.size(); i++) {
        SIXND_CHECK(valid_utf8(specials[i]), "--special", "\"" + excerpt(specials[i]) + "\" is not valid UTF-8");
        SIXND_CHECK(specials[i].size() > 1, "--special",
                    "\"" + specials[i] + "\" is one byte, which is always an ordinary token; a special token must be " +
                        "text no ordinary token spells");
        for (size_t j = 0; j < i; j++)
            SIXND_CHECK(specials[j] != specials[i], "--special", "\"" + excerpt(specials[i]) + "\" is given twice");
    }
}

void add_threads(CLI::App* cmd, int* threads) {
    cmd->add_option("--threads", *threads, "worker threads (0: all cores)")->check(CLI::Range(0, kMaxThreads));
}

// vocab_size_typed: the flag as given, since CLI11 saturates a number too large for int64_t.
int train(const std::vector<std::string>& inputs, int64_t vocab_size, const std::string& vocab_size_typed,
          const std::vector<std::string>& specials, const std::string& out, const std::string& pattern,
          const std::string& heldout_file, double heldout_fraction, const std::string& hf_out, int threads,
          size_t max_token_bytes) {
    // Token ids are stored as int32 in shards and models; far below that, training simply stops
    // when the text has no more pairs to merge.
    SIXND_CHECK(vocab_size >= 256 && vocab_size <= INT32_MAX, "--vocab-size",
                "must be between 256 (the byte tokens) and 2^31 - 1, not " + vocab_size_typed);
    const size_t floor = 256 + specials.size();
    SIXND_CHECK(static_cast<size_t>(vocab_size) >= floor, "--vocab-size",
                vocab_size_typed + " leaves no room for the " + std::to_string(specials.size()) +
                    " --special token(s): give at least 256 + " + std::to_string(specials.size()) + " = " +
                    std::to_string(floor));
    SIXND_CHECK(heldout_fraction >= 0 && heldout_fraction <= 0.5, "--heldout-fraction",
                "must be between 0 and 0.5, not " + std::to_string(heldout_fraction));  // NaN fails here too
    SIXND_CHECK(max_token_bytes != 1, "--max-token-bytes", "1 allows no merge at all: give 0 (no limit) or at least 2");
    check_specials(specials);
    const std::string regex = resolve_pattern(pattern);
    // Inputs and outputs are checked before the long work, not found unusable after it.
    std::vector<std::pair<std::string, std::string>> read = {{heldout_file, "--heldout"}};
    for (const auto& in : inputs) {
        check_train_input(in, "--input");
        read.emplace_back(in, "--input");
    }
    // Compression measured on no text is 0 bytes per token, a number that looks like a result.
    if (!heldout_file.empty()) {
        check_train_input(heldout_file, "--heldout");
        SIXND_CHECK(file_size(heldout_file) > 0, heldout_file,
                    "is empty; --heldout names the text to report compression on");
    }
    // One text given twice would count its pairs twice, and held-out text that is also an input
    // would measure compression on text trained on: files compared as the kernel knows them.
    std::map<std::pair<dev_t, ino_t>, std::string> seen;
    for (const auto& in : inputs) {
        struct stat st;
        if (stat(in.c_str(), &st) != 0) continue;  // check_train_input named it
        const auto [it, fresh] = seen.emplace(std::make_pair(st.st_dev, st.st_ino), in);
        SIXND_CHECK(fresh, "--input", in + " is the same file as " + it->second + ": give each text once");
    }
    struct stat held;
    if (!heldout_file.empty() && stat(heldout_file.c_str(), &held) == 0 && seen.count({held.st_dev, held.st_ino}))
        throw Error("--heldout", heldout_file + " is also an --input: held-out text must not be trained on");
    check_outputs(out, hf_out, read);
    std::vector<InputRange> train_ranges, heldout_ranges;
    if (!heldout_file.empty()) {
        for (const auto& f : inputs) train_ranges.push_back({f, 0, file_size(f)});
        heldout_ranges.push_back({heldout_file, 0, file_size(heldout_file)});
    } else {
        split_heldout(inputs, heldout_fraction, specials, &train_ranges, &heldout_ranges);
    }
    BpeTrainOptions opt;
    opt.vocab_size = static_cast<size_t>(vocab_size);
    opt.specials = specials;
    opt.pattern = regex;
    opt.threads = threads;
    opt.max_token_bytes = max_token_bytes;
    opt.progress = true;
    auto start = std::chrono::steady_clock::now();
    Tokenizer tok = train_bpe(train_ranges, opt);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    // Everything that can fail (the held-out encode, the summary) runs before the outputs are
    // committed, so a failed run leaves no output behind.
    nlohmann::ordered_json summary = {{"out", out},
                                      {"vocab_size", tok.vocab_size()},
                                      {"merges", tok.spec().merges.size()},
                                      {"train_seconds", secs},
                                      {"hash", tok.hash()}};
    if (!heldout_ranges.empty()) {
        uint64_t heldout_bytes = 0;
        for (const InputRange& r : heldout_ranges) heldout_bytes += r.end - r.begin;
        EncodeStats s = encode_stream(tok, heldout_ranges, threads, kChunkBytes, [](const std::vector<uint32_t>&) {},
                                      encode_progress("encoding the held-out text", heldout_bytes));
        double bpt = s.tokens ? static_cast<double>(s.bytes) / static_cast<double>(s.tokens) : 0.0;
        log_info("held-out text: " + std::to_string(s.bytes) + " bytes -> " + std::to_string(s.tokens) +
                 " tokens, " + std::to_string(bpt) + " bytes per token");
        summary["heldout_bytes"] = s.bytes;
        summary["heldout_tokens"] = s.tokens;
        summary["bytes_per_token"] = bpt;
    }
    // --out is any byte string, JSON text only UTF-8: an invalid sequence shows as U+FFFD.
    const std::string summary_line = summary.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    save_outputs(tok, out, hf_out);
    log_info("wrote " + out + " (" + std::to_string(tok.vocab_size()) + " tokens) in " + std::to_string(secs) + " s");
    std::printf("%s\n", summary_line.c_str());
    return 0;
}

// For "-": a failed write (a full disk behind a redirect) is an error, not output quietly lost.
// fwrite() sends what stdio does not buffer at once, so its failure is the one that knows why:
// the flush after it then finds nothing to write and succeeds.
void write_stdout(const std::string& bytes) {
    const bool written = std::fwrite(bytes.data(), 1, bytes.size(), stdout) == bytes.size();
    SIXND_CHECK(written && std::fflush(stdout) == 0, "stdout", std::string("write failed: ") + std::strerror(errno));
}

// Ids to stdout as one JSON array, written as they come so memory stays bounded; a failed write
// stops the encode rather than letting it run on with nowhere to go.
class JsonIdWriter {
public:
    JsonIdWriter() { std::fputc('[', stdout); }
    void write(const std::vector<uint32_t>& ids) {
        std::string buf;
        buf.reserve(ids.size() * 7);
        char num[16];
        for (uint32_t id : ids) {
            if (!first_) buf += ", ";
            first_ = false;
            buf.append(num, std::to_chars(num, num + sizeof num, id).ptr);
        }
        write_stdout(buf);
    }
    void finish() { write_stdout("]\n"); }

private:
    bool first_ = true;
};

int encode(const std::string& tokenizer_path, const std::string& input, const std::string& out, bool ordinary,
           int threads) {
    Tokenizer tok = Tokenizer::load(tokenizer_path);
    if (ordinary) {
        TokenizerSpec spec = tok.spec();
        spec.specials.clear();
        tok = Tokenizer::from_spec(std::move(spec), tokenizer_path);
    }
    std::vector<InputRange> inputs = {{input}};
    const auto progress = encode_progress("encoding", input == "-" ? 0 : file_size(input));
    if (out != "-") {
        check_not_same_file(out, input, "--input");
        check_not_same_file(out, tokenizer_path, "--tokenizer");
        check_earlier_output(out, "--out", "a token shard", token_shard);
    }
    EncodeStats s;
    if (out == "-") {
        JsonIdWriter w;
        s = encode_stream(tok, inputs, threads, kChunkBytes, [&](const std::vector<uint32_t>& ids) { w.write(ids); }, progress);
        w.finish();
    } else {
        ShardFileWriter w(out, tok.vocab_size());
        s = encode_stream(tok, inputs, threads, kChunkBytes, [&](const std::vector<uint32_t>& ids) { w.write(ids); }, progress);
        w.finish();
    }
    double mb = static_cast<double>(s.bytes) / 1e6;
    log_info("encoded " + std::to_string(mb) + " MB into " + std::to_string(s.tokens) + " tokens in " +
             std::to_string(s.seconds) + " s (" + std::to_string(s.seconds > 0 ? mb / s.seconds : 0.0) + " MB/s)");
    return 0;
}

std::string read_stdin() {
    std::string text;
    char buf[1 << 16];
    size_t got;
    while ((got = std::fread(buf, 1, sizeof buf, stdin)) > 0) text.append(buf, got);
    SIXND_CHECK(!std::ferror(stdin), "stdin", std::string("read failed: ") + std::strerror(errno));
    return text;
}

// The ids of an llm.c shard held in memory (Shard maps only regular files, and a shard may come
// down a pipe).
std::vector<uint32_t> shard_ids(const std::string& bytes, const std::string& where, size_t vocab_size) {
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
    const ShardHeader h = parse_shard_header(data, bytes.size(), where);
    std::vector<uint32_t> ids(h.tokens);
    const unsigned char* tokens = data + kShardHeaderInts * 4;
    for (size_t i = 0; i < h.tokens; i++) {
        if (h.token_bytes == 4) {
            std::memcpy(&ids[i], tokens + i * 4, 4);
        } else {
            uint16_t id;
            std::memcpy(&id, tokens + i * 2, 2);
            ids[i] = id;
        }
        SIXND_CHECK(ids[i] < vocab_size, where,
                    "the token at index " + std::to_string(i) + " is " + std::to_string(ids[i]) +
                        ", outside the vocabulary (size " + std::to_string(vocab_size) + ")");
    }
    return ids;
}

// Ids from an llm.c shard, or from text (see tokenizer/id_list.h); every id is checked against
// the vocabulary here, where the input and position can still be named. The input is read once:
// a pipe or FIFO can be neither opened again nor read back after a look at its first bytes.
std::vector<uint32_t> read_ids(const std::string& input, size_t vocab_size) {
    const std::string where = input_name(input);
    const std::string bytes = input == "-" ? read_stdin() : read_whole_file(input);
    if (token_shard(bytes)) return shard_ids(bytes, where, vocab_size);
    return parse_id_list(bytes, where, vocab_size);
}

int decode(const std::string& tokenizer_path, const std::string& input, const std::string& out, bool as_text) {
    if (out != "-") {
        check_replaceable_file(out);
        check_not_same_file(out, input, "--input");
        check_not_same_file(out, tokenizer_path, "--tokenizer");
    }
    Tokenizer tok = Tokenizer::load(tokenizer_path);
    std::vector<uint32_t> ids = read_ids(input, tok.vocab_size());
    std::string bytes = as_text ? tok.decode_text(ids) : tok.decode(ids);
    if (out == "-") {
        write_stdout(bytes);
    } else {
        write_file_atomically(out, bytes);
    }
    return 0;
}

int info(const std::string& tokenizer_path) {
    Tokenizer tok = Tokenizer::load(tokenizer_path);
    nlohmann::ordered_json specials = nlohmann::ordered_json::object();
    for (const auto& [text, id] : tok.spec().specials) specials[text] = id;
    nlohmann::ordered_json j = {{"vocab_size", tok.vocab_size()},
                                {"merges", tok.spec().merges.size()},
                                {"specials", specials},
                                {"pattern", pattern_name(tok.spec().pattern)},
                                {"hash", tok.hash()}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
}

}  // namespace

int run_tokenizer(int argc, char** argv) {
    CLI::App app{"byte-level BPE tokenizers: train, encode, decode, import GPT-2's, export to Hugging Face",
                 "sixnd tokenizer"};
    app.require_subcommand(1);
    int threads = 0;
    std::string out, tokenizer_path, input = "-", pattern = "gpt2", hf_out;
    std::vector<std::string> specials;

    auto* train_cmd = app.add_subcommand("train", "learn a byte-level BPE vocabulary from text files");
    std::vector<std::string> inputs;
    int64_t vocab_size = 0;
    std::string heldout;
    double heldout_fraction = 0.01;
    train_cmd->add_option("--input", inputs, "training text files")->required()->expected(1, -1);
    train_cmd->add_option("--vocab-size", vocab_size, "tokens in all: the 256 bytes, the tokens merges make, and the specials")->required();
    train_cmd->add_option("--special", specials, "a special token, e.g. <|endoftext|> (repeatable)");
    train_cmd->add_option("--out", out, "the sixnd tokenizer file to write")->required();
    train_cmd->add_option("--pattern", pattern, "pre-tokenizer: gpt2, gpt4 (also called cl100k) or a PCRE2 regex")->capture_default_str();
    train_cmd->add_option("--heldout", heldout, "text to report compression on (else a tail of the input)");
    train_cmd->add_option("--heldout-fraction", heldout_fraction, "tail of the input held out of training")->capture_default_str()
        ->check(CLI::Range(0.0, 0.5));
    train_cmd->add_option("--hf-out", hf_out, "also write a Hugging Face tokenizer.json");
    size_t max_token_bytes = 0;
    train_cmd->add_option("--max-token-bytes", max_token_bytes, "longest token a merge may make, in bytes (0: no limit)")
        ->capture_default_str()
        ->check(CLI::Range(size_t{0}, size_t{1} << 20));
    add_threads(train_cmd, &threads);

    auto* encode_cmd = app.add_subcommand("encode", "text -> token ids (an llm.c shard, or a JSON array with -)");
    bool ordinary = false;
    encode_cmd->add_option("--tokenizer", tokenizer_path, "sixnd tokenizer file")->required();
    encode_cmd->add_option("--input", input, "text file (- for stdin)")->capture_default_str();
    std::string encode_out = "-";
    encode_cmd->add_option("--out", encode_out, "llm.c shard to write, or - for a JSON array on stdout")->capture_default_str();
    encode_cmd->add_flag("--ordinary", ordinary, "treat special-token strings as ordinary text");
    add_threads(encode_cmd, &threads);

    auto* decode_cmd = app.add_subcommand("decode", "token ids (llm.c shard or JSON array) -> bytes");
    bool as_text = false;
    std::string decode_out = "-";
    decode_cmd->add_option("--tokenizer", tokenizer_path, "sixnd tokenizer file")->required();
    decode_cmd->add_option("--input", input, "shard or ids file (- for stdin)")->capture_default_str();
    decode_cmd->add_option("--out", decode_out, "file to write (- for stdout)")->capture_default_str();
    decode_cmd->add_flag("--text", as_text, "replace invalid UTF-8 with U+FFFD");

    auto* import_cmd = app.add_subcommand("import-gpt2", "GPT-2's vocab.json + merges.txt -> sixnd tokenizer file");
    std::string vocab_path, merges_path;
    import_cmd->add_option("--vocab", vocab_path, "vocab.json")->required();
    import_cmd->add_option("--merges", merges_path, "merges.txt")->required();
    import_cmd->add_option("--out", out, "the sixnd tokenizer file to write")->required();
    import_cmd->add_option("--special", specials,
                           "a special token (repeatable; default: <|endoftext|>, which naming any replaces)");
    import_cmd->add_option("--pattern", pattern, "pre-tokenizer: gpt2, gpt4 (also called cl100k) or a PCRE2 regex")->capture_default_str();
    import_cmd->add_option("--hf-out", hf_out, "also write a Hugging Face tokenizer.json");

    auto* export_cmd = app.add_subcommand("export-hf", "sixnd tokenizer file -> Hugging Face tokenizer.json");
    export_cmd->add_option("--tokenizer", tokenizer_path, "sixnd tokenizer file")->required();
    export_cmd->add_option("--out", out, "tokenizer.json to write (- for stdout)")->required();

    auto* info_cmd = app.add_subcommand("info", "summary of a tokenizer file as one JSON line");
    info_cmd->add_option("--tokenizer", tokenizer_path, "sixnd tokenizer file")->required();

    check_subcommand(app, argc, argv);
    if (!parse_flags(app, argc, argv)) return 0;
    refuse_empty_values(app);

    if (train_cmd->parsed()) {
        // Both name the held-out text; with --heldout, training reads all of every --input.
        SIXND_CHECK(heldout.empty() || train_cmd->get_option("--heldout-fraction")->count() == 0, "--heldout-fraction",
                    "has no effect with --heldout (the held-out text is that file); give one of the two");
        return train(inputs, vocab_size, train_cmd->get_option("--vocab-size")->results().front(), specials, out, pattern,
                     heldout, heldout_fraction, hf_out, threads, max_token_bytes);
    }
    if (encode_cmd->parsed() || decode_cmd->parsed()) check_tokenizer_not_stdin(tokenizer_path, input);
    if (encode_cmd->parsed()) return encode(tokenizer_path, input, encode_out, ordinary, threads);
    if (decode_cmd->parsed()) return decode(tokenizer_path, input, decode_out, as_text);
    if (import_cmd->parsed()) {
        if (specials.empty()) specials = {"<|endoftext|>"};
        check_specials(specials);
        const std::string regex = resolve_pattern(pattern);
        check_outputs(out, hf_out, {{vocab_path, "--vocab"}, {merges_path, "--merges"}});
        Tokenizer tok = import_gpt2(vocab_path, merges_path, specials, regex);
        save_outputs(tok, out, hf_out);
        log_info("wrote " + out + " (" + std::to_string(tok.vocab_size()) + " tokens, " +
                 std::to_string(tok.spec().merges.size()) + " merges)");
        return 0;
    }
    if (export_cmd->parsed()) {
        if (out != "-") {
            check_not_same_file(out, tokenizer_path, "--tokenizer");
            check_earlier_output(out, "--out", "a tokenizer.json", hf_tokenizer_json_head);
        }
        const std::string json = hf_json(Tokenizer::load(tokenizer_path), tokenizer_path);
        if (out == "-")
            write_stdout(json);
        else
            write_file_atomically(out, json);
        return 0;
    }
    return info(tokenizer_path);
}

}  // namespace sixnd::cli
