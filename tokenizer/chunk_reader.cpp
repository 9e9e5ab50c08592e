#include "tokenizer/chunk_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <optional>

#include "core/error.h"
#include "core/printable.h"
#include "core/read_file.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/utf8.h"

namespace sixnd {
namespace {

bool printable(unsigned char c) { return c > ' ' && c < 0x7F; }
bool letter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Whether the n bytes at t[k] are one character no whitespace run takes in: printable ASCII, or
// a valid multi-byte character outside White_Space. Invalid bytes never count, so no cut hangs
// on how the pre-tokenizer treats them.
bool solid(std::string_view t, size_t k, size_t n) {
    const auto c = static_cast<unsigned char>(t[k]);
    if (n == 1) return printable(c);
    if (utf8_sequence_length(t, k) != n) return false;
    return !white_space(utf8_code_point(t, k, n));
}
bool solid_at(std::string_view t, size_t k) {
    const auto c = static_cast<unsigned char>(t[k]);
    return solid(t, k, c < 0x80 ? 1 : std::max<size_t>(utf8_sequence_length(t, k), 1));
}
// The character that ends just before t[k].
bool solid_before(std::string_view t, size_t k) {
    size_t start = k - 1;
    while (start > 0 && k - start < 4 && (static_cast<unsigned char>(t[start]) & 0xC0) == 0x80) start--;
    return solid(t, start, k - start);
}

// Whether an occurrence of a special token (matched or not) covers both t[i - 1] and t[i].
bool spanned(std::string_view t, size_t i, const SpecialTokens& specials) {
    for (size_t j = i > specials.max_len() ? i - specials.max_len() + 1 : 0; j < i; j++) {
        // The longest special starting at j, if any.
        auto m = specials.find(t.substr(j, specials.max_len()), 0);
        if (m && m->pos == 0 && m->len > i - j) return true;
    }
    return false;
}

}  // namespace

size_t last_safe_cut(std::string_view t, const SpecialTokens& specials, size_t from, bool more_follows) {
    // A special token covering place i starts before i and ends by i - 1 + max_len: it lies
    // within t, so find_all() sees it, when i + max_len - 1 <= size.
    const size_t unseen = more_follows && specials.max_len() > 1 ? specials.max_len() - 1 : 0;
    if (t.size() <= unseen) return 0;
    // Found once, at the first place that is otherwise safe: text with none costs no search.
    std::optional<std::vector<SpecialTokens::Match>> found;
    auto inside_special = [&](size_t i) {
        if (!found) found = specials.find_all(t);
        // Matches do not overlap, so only the last one starting before i can cover i.
        auto after = std::partition_point(found->begin(), found->end(), [&](const auto& m) { return m.pos < i; });
        return after != found->begin() && std::prev(after)->pos + std::prev(after)->len > i;
    };
    for (size_t i = t.size() - std::max<size_t>(unseen, 1); i >= std::max<size_t>(from, 1); i--) {
        auto c = [&](size_t k) { return static_cast<unsigned char>(t[k]); };
        bool before_space = c(i) == ' ' && printable(c(i - 1)) && i + 1 < t.size() && letter(c(i + 1));
        bool after_newline = i >= 2 && c(i - 1) == '\n' && solid_at(t, i) && solid_before(t, i - 1);
        if ((before_space || after_newline) && !inside_special(i)) return i;
    }
    return 0;
}

uint64_t split_place(const std::string& path, uint64_t at, const SpecialTokens& specials) {
    constexpr uint64_t kWindow = 1 << 20;
    // A cut looks one byte past itself, and a special token covering it may run on max_len - 1.
    const size_t look = std::max<size_t>(specials.max_len(), 2) - 1;
    const uint64_t lo = at > kWindow ? at - kWindow : 0;
    const FileReader file(path);
    std::string buf(at + look - lo, '\0');
    buf.resize(file.read(buf.data(), lo, buf.size()));
    if (buf.size() <= at - lo) return at;  // the file shrank since its size was taken
    // From a place no occurrence spans, the matches found are those found from the file's start
    // (the last match before it ends by it). An occurrence spanning a place max_len or more bytes
    // into buf starts in buf.
    size_t sync = 0;
    if (lo > 0)
        for (sync = specials.max_len(); sync < at - lo && spanned(buf, sync, specials); sync++) {
        }
    const std::string_view text = std::string_view(buf).substr(sync);
    // more_follows keeps the cut at or before `at`: text ends `look` bytes after it.
    if (size_t cut = last_safe_cut(text, specials, 0, /*more_follows=*/true)) return lo + sync + cut;
    size_t i = at - lo - sync;
    // Back to the start of the UTF-8 character, then of the special token, `at` is in.
    for (int k = 0; k < 3 && i > 0 && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80; k++) i--;
    for (const auto& m : specials.find_all(text))
        if (m.pos < i && i < m.pos + m.len) i = m.pos;
    return lo + sync + i;
}

ChunkReader::ChunkReader(std::vector<InputRange> inputs, size_t chunk_bytes, const SpecialTokens* specials,
                         const std::string& pattern)
    : inputs_(std::move(inputs)),
      chunk_bytes_(std::max<size_t>(chunk_bytes, 64)),
      cut_inside_(pattern_name(pattern) != "custom"),
      specials_(specials ? specials : &no_specials_) {}

ChunkReader::~ChunkReader() {
    if (file_ && file_ != stdin) std::fclose(file_);
}

void ChunkReader::open_next() {
    const InputRange& in = inputs_[index_++];
    if (in.path == "-") {
        file_ = stdin;
    } else {
        struct stat st;
        if (stat(in.path.c_str(), &st) != 0) throw Error(in.path, std::string("cannot open: ") + std::strerror(errno));
        SIXND_CHECK(!S_ISDIR(st.st_mode), in.path, "is a directory, not a file");
        file_ = std::fopen(in.path.c_str(), "rb");
        if (!file_) throw Error(in.path, std::string("cannot open: ") + std::strerror(errno));
        if (in.begin > 0 && std::fseek(file_, static_cast<long>(in.begin), SEEK_SET) != 0)
            throw Error(in.path, std::string("cannot seek: ") + std::strerror(errno));
    }
    left_ = in.end >= in.begin ? in.end - in.begin : 0;
}

bool ChunkReader::read_more(std::string& buf, size_t n) {
    n = static_cast<size_t>(std::min<uint64_t>(n, left_));
    if (n == 0) return false;
    size_t old = buf.size();
    buf.resize(old + n);
    size_t got = std::fread(&buf[old], 1, n, file_);
    buf.resize(old + got);
    left_ -= got;
    bytes_read_ += got;
    if (got < n) {
        if (std::ferror(file_))
            throw Error(input_name(inputs_[index_ - 1].path), std::string("read failed: ") + std::strerror(errno));
        left_ = 0;
    }
    return got > 0;
}

bool ChunkReader::next(std::string& chunk) {
    for (;;) {
        if (!file_) {
            if (index_ >= inputs_.size()) return false;
            open_next();
        }
        std::string buf;
        buf.swap(carry_);
        bool more = true;
        size_t searched = 0;  // a cut was not found in buf[0, searched)
        while (more) {
            more = read_more(buf, chunk_bytes_ > buf.size() ? chunk_bytes_ - buf.size() : chunk_bytes_);
            peak_buffer_ = std::max(peak_buffer_, buf.size());
            if (!more) break;
            if (!cut_inside_) continue;
            // Search only the new part, plus enough overlap for the context a cut looks at.
            size_t margin = specials_->max_len() + 2;
            size_t from = searched > margin ? searched - margin : 0;
            // The whole buffer is passed, so a special token starting before `from` is seen.
            size_t cut = last_safe_cut(buf, *specials_, from, /*more_follows=*/true);
            if (cut > 0) {
                chunk_path_ = inputs_[index_ - 1].path;
                carry_.assign(buf, cut, std::string::npos);
                buf.resize(cut);
                chunk.swap(buf);
                return true;
            }
            searched = buf.size();
        }
        if (file_ != stdin) std::fclose(file_);
        file_ = nullptr;
        if (!buf.empty()) {
            chunk_path_ = inputs_[index_ - 1].path;
            chunk.swap(buf);
            return true;
        }
    }
}

}  // namespace sixnd
