#include "tokenizer/chunk_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <optional>

#include "core/error.h"
#include "tokenizer/pretokenizer.h"

namespace sixnd {
namespace {

bool printable(unsigned char c) { return c > ' ' && c < 0x7F; }
bool letter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

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
        bool after_newline = i >= 2 && c(i - 1) == '\n' && printable(c(i)) && printable(c(i - 2));
        if ((before_space || after_newline) && !inside_special(i)) return i;
    }
    return 0;
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
        if (std::ferror(file_)) throw Error(inputs_[index_ - 1].path, std::string("read failed: ") + std::strerror(errno));
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
