#include "data/ingest.h"

#include <utf8proc.h>
#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/digits.h"
#include "core/byte_order_mark.h"
#include "core/error.h"
#include "core/log.h"
#include "core/read_file.h"
#include "core/sibling_name.h"
#include "data/byte_source.h"
#include "data/prepare_out.h"
#include "data/shard.h"
#include "tokenizer/utf8.h"

namespace sixnd::data {

namespace fs = std::filesystem;

InputFormat parse_format(const std::string& name) {
    if (name == "auto") return InputFormat::automatic;
    if (name == "text") return InputFormat::text;
    if (name == "jsonl") return InputFormat::jsonl;
    if (name == "fortune") return InputFormat::fortune;
    throw Error("--format", "unknown format '" + name + "' (auto, text, jsonl or fortune)");
}

const char* format_name(InputFormat f) {
    switch (f) {
        case InputFormat::text: return "text";
        case InputFormat::jsonl: return "jsonl";
        case InputFormat::fortune: return "fortune";
        default: return "auto";
    }
}

namespace {

// A directory `data prepare` wrote (its manifest says so) or is writing / was killed writing
// (OUT.partial-PID, OUT.old-PID): shards and scratch files, never text to learn from. A number
// no pid can be is the user's (a backup "web.old-20250101"), by the rule of the other scanners.
bool is_prepare_output(const fs::path& dir) {
    const std::string name = dir.filename().string();
    return sibling_pid_value(digits_after(name, ".partial-")) >= 0 ||
           sibling_pid_value(digits_after(name, ".old-")) >= 0 || is_data_output_dir(dir.string());
}

// An llm.c token shard: a valid header whose count matches the file size.
bool is_token_shard(const std::string& path, uint64_t size) {
    if (size < kShardHeaderInts * 4) return false;
    int32_t h[3] = {};
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return false;
    bool got = std::fread(h, sizeof h, 1, f) == 1;
    std::fclose(f);
    if (!got || h[2] < 0) return false;
    uint64_t width = h[0] == kShardMagicU16 && h[1] == kShardVersionU16 ? 2 : h[0] == kShardMagicU32 && h[1] == kShardVersionU32 ? 4 : 0;
    return width && size == kShardHeaderInts * 4 + width * static_cast<uint64_t>(h[2]);
}

}  // namespace

std::vector<std::string> list_source_files(const std::string& pattern) {
    std::vector<std::string> out, skipped_outputs, skipped_shards, loops, not_files;
    std::set<fs::path> walked;  // canonical directories: a symlink back up the tree ends here
    std::vector<fs::path> todo;
    std::map<fs::path, bool> output_dirs;  // asked once per directory, not once per file
    auto add_file = [&](const fs::path& p, const fs::path& parent) {
        std::error_code ec;
        uint64_t size = fs::file_size(p, ec);
        const fs::path dir = parent.empty() ? fs::path(".") : parent;
        auto known = output_dirs.find(dir);
        if (known == output_dirs.end()) known = output_dirs.emplace(dir, is_prepare_output(dir)).first;
        if (!ec && is_token_shard(p.string(), size))
            skipped_shards.push_back(p.string());
        else if (known->second)
            skipped_outputs.push_back(p.string());
        else
            out.push_back(p.string());
    };
    for (const auto& p : expand_glob(pattern)) {
        std::error_code ec;
        if (fs::is_directory(p, ec))
            todo.emplace_back(p);
        else
            add_file(p, fs::path(p).parent_path());
    }
    while (!todo.empty()) {
        fs::path dir = std::move(todo.back());
        todo.pop_back();
        std::error_code ec;
        fs::path real = fs::canonical(dir, ec);
        if (ec) throw Error(dir.string(), "cannot walk directory: " + ec.message());
        if (!walked.insert(real).second) {
            loops.push_back(dir.string());
            continue;
        }
        if (is_prepare_output(dir)) {
            skipped_outputs.push_back(dir.string());
            continue;
        }
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
            std::error_code kind;
            if (it->is_directory(kind))
                todo.push_back(it->path());
            else if (it->is_regular_file(kind) || (it->is_symlink(kind) && !it->exists(kind)))
                add_file(it->path(), dir);  // a dangling link is a file gone missing: opening it says so
            else
                not_files.push_back(it->path().string());
        }
        if (ec) throw Error(dir.string(), "cannot walk directory: " + ec.message());
    }
    auto warn = [&](const std::vector<std::string>& v, const std::string& what) {
        if (!v.empty())
            log_warn(pattern + ": skipped " + std::to_string(v.size()) + " " + what + " (first: " + v.front() + ")");
    };
    warn(skipped_outputs, "path(s) written by an earlier sixnd data prepare");
    warn(skipped_shards, "llm.c token shard(s), which are not text");
    warn(loops, "directory link(s) to a directory already walked");
    warn(not_files, "entr(ies) that are neither files nor directories (pipes, sockets, devices)");
    std::sort(out.begin(), out.end());
    // One file reached by two names (fortune's "art" and its link "art.u8") is read once, under
    // the first name.
    std::vector<std::string> unique;
    std::set<std::string> seen;
    for (auto& p : out) {
        std::error_code ec;
        fs::path real = fs::canonical(p, ec);
        if (seen.insert(ec ? p : real.string()).second) unique.push_back(std::move(p));
    }
    return unique;
}

// Extensions in any case: "C4.JSONL.GZ" is as much gzip'd JSON Lines as "c4.jsonl.gz".
static bool ends_with(const std::string& s, const char* suffix) {
    size_t n = std::strlen(suffix);
    if (s.size() < n) return false;
    for (size_t i = 0; i < n; i++)
        if (std::tolower(static_cast<unsigned char>(s[s.size() - n + i])) != suffix[i]) return false;
    return true;
}

DocReader::DocReader(const std::string& path, const IngestOptions& opts)
    : path_(path), opts_(opts), format_(opts.format), buf_(1 << 20) {
    // Only regular files: opening a FIFO waits for a writer, a device such as /dev/zero never
    // ends, and neither reads the same twice (pass 2 reads every file again). A missing file is
    // named when it is opened.
    require_regular_file(path);
    source_ = std::make_unique<ByteSource>(path, ends_with(path, ".gz"));
    hash_state_ = XXH3_createState();
    XXH3_64bits_reset(static_cast<XXH3_state_t*>(hash_state_));
    if (format_ != InputFormat::automatic) return;
    std::string base = ends_with(path, ".gz") ? path.substr(0, path.size() - 3) : path;
    if (ends_with(base, ".jsonl") || ends_with(base, ".ndjson")) {
        format_ = InputFormat::jsonl;
        return;
    }
    // A fortune file is text whose documents are separated by "%" lines; look for one early on.
    try {
        fill();
    } catch (...) {  // the destructor will not run for a half-built reader
        XXH3_freeState(static_cast<XXH3_state_t*>(hash_state_));
        throw;
    }
    std::string_view head(buf_.data() + pos_, end_ - pos_);
    // A line holding only "%", first or further on; read_line takes "%\r\n" for one too.
    auto has_line = [&](std::string_view nl_line) {
        return head.rfind(nl_line.substr(1), 0) == 0 || head.find(nl_line) != std::string_view::npos;
    };
    format_ = has_line("\n%\n") || has_line("\n%\r\n") ? InputFormat::fortune : InputFormat::text;
}

DocReader::~DocReader() {
    XXH3_freeState(static_cast<XXH3_state_t*>(hash_state_));
}

uint64_t DocReader::content_hash() const { return XXH3_64bits_digest(static_cast<XXH3_state_t*>(hash_state_)); }

// Appends more decompressed bytes to the buffer (compacting it first); false at end of file.
bool DocReader::fill() {
    if (eof_) return false;
    if (pos_ > 0) {
        std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
        end_ -= pos_;
        pos_ = 0;
    }
    if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
    const size_t n = source_->read(buf_.data() + end_, buf_.size() - end_);
    if (n == 0) {
        eof_ = true;
        return false;
    }
    XXH3_64bits_update(static_cast<XXH3_state_t*>(hash_state_), buf_.data() + end_, n);
    const bool first = bytes_ == 0;
    bytes_ += n;
    end_ += n;
    // A byte order mark says how the file is encoded; it is no part of the first document.
    if (first) {
        const std::string_view head(buf_.data(), end_);
        pos_ = utf8_bom_size(head);
        // Read as UTF-8, wide text would be dropped as binary without a word (and, as evaluation
        // text, leave single letters that match nothing).
        refuse_wide_text(head, path_);
    }
    return true;
}

// One line without its "\n" (and "\r"); false when the file is exhausted.
bool DocReader::read_line(std::string& line) {
    size_t scan = pos_;
    for (;;) {
        const char* nl = static_cast<const char*>(std::memchr(buf_.data() + scan, '\n', end_ - scan));
        if (nl) {
            size_t e = static_cast<size_t>(nl - buf_.data());
            line.assign(buf_.data() + pos_, e - pos_);
            pos_ = e + 1;
            break;
        }
        scan = end_ - pos_;
        if (!fill()) {
            if (pos_ == end_) return false;
            line.assign(buf_.data() + pos_, end_ - pos_);
            pos_ = end_;
            break;
        }
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    line_no_++;
    return true;
}

bool DocReader::next(std::string& doc) {
    if (done_) return false;
    doc.clear();
    switch (format_) {
        case InputFormat::jsonl:
            if (next_jsonl(doc)) return true;
            break;
        case InputFormat::fortune: {
            std::string line;
            bool any = false;
            while (read_line(line)) {
                if (line == "%") {
                    if (any) return true;
                    continue;  // "%%" or a leading "%" separates nothing
                }
                if (any) doc.push_back('\n');
                doc += line;
                any = true;
            }
            if (any) return true;
            break;
        }
        default:
            while (fill()) {
            }
            if (end_ > pos_) {
                doc.assign(buf_.data() + pos_, end_ - pos_);
                pos_ = end_;
                return true;
            }
    }
    done_ = true;
    return false;
}

namespace {

// Each byte that does not start a valid UTF-8 sequence replaced by `with`, one byte at a time,
// as utf8proc_iterate judges them.
std::string replace_invalid_bytes(std::string_view s, std::string_view with) {
    const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
    const size_t n = s.size();
    std::string out;
    out.reserve(n + 16);
    for (size_t i = 0; i < n;) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate(p + i, static_cast<utf8proc_ssize_t>(n - i), &cp);
        if (k < 0) {
            out += with;
            i++;
        } else {
            out.append(s, i, static_cast<size_t>(k));
            i += static_cast<size_t>(k);
        }
    }
    return out;
}

// The line with each escaped lone surrogate ("\ud800" not followed by a low one, or a low one
// alone) made one invalid byte, 0xFF: Python's json.dumps writes them for text that held them
// (scraped text does), and JSON parsers refuse them. Backslashes stand only inside strings, so
// walking escape by escape finds them without following the strings.
std::string lone_surrogates_as_invalid(const std::string& line) {
    auto unit = [&](size_t i) -> long {  // the code unit of the \uXXXX escape at i, or -1
        if (i + 6 > line.size() || line[i] != '\\' || line[i + 1] != 'u') return -1;
        char* end = nullptr;
        const std::string hex = line.substr(i + 2, 4);
        const long u = std::strtol(hex.c_str(), &end, 16);
        return end == hex.c_str() + 4 ? u : -1;
    };
    auto high = [](long u) { return u >= 0xD800 && u <= 0xDBFF; };
    auto low = [](long u) { return u >= 0xDC00 && u <= 0xDFFF; };
    std::string out;
    for (size_t i = 0; i < line.size();) {
        if (line[i] != '\\' || i + 1 >= line.size()) {
            out += line[i++];
            continue;
        }
        const long u = unit(i);
        const size_t len = u < 0 ? 2 : high(u) && low(unit(i + 6)) ? 12 : 6;
        if (len == 6 && (high(u) || low(u)))
            out += '\xFF';
        else
            out.append(line, i, len);
        i += len;
    }
    return out;
}

// The field's text from a JSON line, or nullopt (with the fault) when there is none. A JSON
// parser refuses invalid UTF-8 (and lone surrogates, made invalid bytes first), so such a line
// is parsed again twice, each invalid byte standing in as U+FFFD and then as U+FFFC: where the
// two texts differ the field held an invalid byte, and 0xFF goes there. The document so reaches
// clean_text with invalid UTF-8 where the line had it, and --invalid-utf8 repairs (one U+FFFD per
// byte) or drops it as it does plain text.
std::optional<std::string> jsonl_text(const std::string& raw_line, const std::string& field, std::string& fault) {
    auto text = [&](const std::string& json_text) -> std::optional<std::string> {
        auto j = nlohmann::json::parse(json_text, nullptr, false);
        if (j.is_discarded()) {
            fault = "broken JSON line";
        } else if (field.empty()) {
            // Depth first in the record's order, on a stack of our own: a line may nest arrays
            // deeper than the call stack reaches.
            std::string all;
            std::vector<const nlohmann::json*> todo{&j};
            while (!todo.empty()) {
                const nlohmann::json& v = *todo.back();
                todo.pop_back();
                if (v.is_string()) all += v.get<std::string>() + "\n";
                if (v.is_structured())
                    for (auto e = v.crbegin(); e != v.crend(); ++e) todo.push_back(&*e);
            }
            if (!all.empty()) return all;
            fault = "no string in the record";
        } else if (!j.is_object())
            fault = "a JSON " + std::string(j.type_name()) + ", not an object";
        else if (!j.contains(field))
            fault = "no field \"" + field + "\" (see --jsonl-field)";
        else if (!j[field].is_string())
            fault = "field \"" + field + "\" is not a string";
        else
            return j[field].get<std::string>();
        return std::nullopt;
    };
    static constexpr std::string_view kFirst = "\xEF\xBF\xBD", kSecond = "\xEF\xBF\xBC";
    std::optional<std::string> first = text(raw_line);
    if (first) return first;
    const std::string line = lone_surrogates_as_invalid(raw_line);
    if (valid_utf8(line)) return first;
    first = text(replace_invalid_bytes(line, kFirst));
    if (!first) return first;
    const std::string second = text(replace_invalid_bytes(line, kSecond)).value();
    std::string doc;
    for (size_t i = 0; i < first->size();) {
        if (first->compare(i, kFirst.size(), kFirst) == 0 && second.compare(i, kSecond.size(), kSecond) == 0) {
            doc += '\xFF';
            i += kFirst.size();
        } else {
            doc += (*first)[i++];
        }
    }
    return doc;
}

}  // namespace

bool DocReader::next_jsonl(std::string& doc) {
    std::string line;
    while (read_line(line)) {
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        std::string fault;
        if (std::optional<std::string> text = jsonl_text(line, opts_.jsonl_field, fault)) {
            doc = std::move(*text);
            return true;
        }
        std::string where = path_ + ":" + std::to_string(line_no_);
        if (opts_.on_error == OnError::fail) throw Error(where, fault + " (" + opts_.broken_line_hint + ")");
        if (broken_lines_++ < 5 && opts_.report_skipped_lines) log_warn(where + ": " + fault + "; skipped");
    }
    return false;
}

// Code points that NFC leaves alone in any context: below U+0300 (ASCII, Latin-1, Latin
// Extended: no combining marks) and General Punctuation from U+2002 (dashes, quotes, ellipsis;
// U+2000 and U+2001 are singletons that NFC replaces). Text made only of these is already NFC,
// and skipping utf8proc's full normalisation for it makes ingest several times faster.
static bool nfc_stable(utf8proc_int32_t cp) { return cp < 0x300 || (cp >= 0x2002 && cp < 0x2070); }

CleanResult clean_text(std::string& text, InvalidUtf8 policy) {
    const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
    size_t n = text.size();
    bool valid = true, stable = true;
    for (size_t i = 0; i < n;) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate(p + i, static_cast<utf8proc_ssize_t>(n - i), &cp);
        if (k < 0) {
            valid = false;
            break;
        }
        stable = stable && nfc_stable(cp);
        i += static_cast<size_t>(k);
    }
    if (valid && stable) return CleanResult::ok;
    CleanResult result = CleanResult::ok;
    if (!valid) {
        if (policy == InvalidUtf8::drop) return CleanResult::dropped;
        text = replace_invalid_bytes(text, "\xEF\xBF\xBD");
        result = CleanResult::repaired;
    }
    utf8proc_uint8_t* out = nullptr;
    utf8proc_ssize_t len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                        static_cast<utf8proc_ssize_t>(text.size()), &out,
                                        static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    if (len < 0) {  // only on out-of-memory once the text is valid; keep it un-normalised
        std::free(out);
        return result;
    }
    text.assign(reinterpret_cast<const char*>(out), static_cast<size_t>(len));
    std::free(out);
    return result;
}

}  // namespace sixnd::data
