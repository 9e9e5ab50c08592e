// Encoding and decoding: specials cut out first, then pre-tokens, then BPE per pre-token
// (through the per-thread cache).
#include "tokenizer/tokenizer.h"

#include "core/error.h"
#include "tokenizer/pretoken_cache.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace sixnd {

void Tokenizer::Impl::encode_ordinary(std::string_view text, std::vector<uint32_t>& out) const {
    thread_local std::vector<std::string_view> pieces;
    thread_local std::vector<uint32_t> work;
    pieces.clear();
    pretokenizer.split(text, pieces);
    bpe::PretokenCache& cache = bpe::PretokenCache::for_thread(serial);
    for (std::string_view piece : pieces) {
        if (piece.size() == 1) {
            out.push_back(byte_ids[static_cast<unsigned char>(piece[0])]);
            continue;
        }
        uint64_t h = bpe::hash_piece(piece);
        uint32_t count = 0;
        if (const uint32_t* hit = cache.find(piece, h, &count)) {
            out.insert(out.end(), hit, hit + count);
            continue;
        }
        work.resize(piece.size());
        for (size_t i = 0; i < piece.size(); i++) work[i] = byte_ids[static_cast<unsigned char>(piece[i])];
        bpe::apply_merges(merges, work);
        cache.insert(piece, h, work.data(), static_cast<uint32_t>(work.size()));
        out.insert(out.end(), work.begin(), work.end());
    }
}

size_t Tokenizer::vocab_size() const { return impl_->spec.tokens.size(); }

std::optional<uint32_t> Tokenizer::special_id(const std::string& token) const {
    for (const auto& [text, id] : impl_->spec.specials)
        if (text == token) return id;
    return std::nullopt;
}

std::vector<uint32_t> Tokenizer::encode(std::string_view text) const {
    std::vector<uint32_t> out;
    out.reserve(text.size() / 3 + 1);
    size_t pos = 0;
    while (auto m = impl_->specials.find(text, pos)) {
        impl_->encode_ordinary(text.substr(pos, m->pos - pos), out);
        out.push_back(m->id);
        pos = m->pos + m->len;
    }
    impl_->encode_ordinary(text.substr(pos), out);
    return out;
}

std::vector<uint32_t> Tokenizer::encode_ordinary(std::string_view text) const {
    std::vector<uint32_t> out;
    out.reserve(text.size() / 3 + 1);
    impl_->encode_ordinary(text, out);
    return out;
}

std::string Tokenizer::decode(const std::vector<uint32_t>& ids) const {
    const auto& tokens = impl_->spec.tokens;
    size_t bytes = 0;
    for (uint32_t id : ids) {
        SIXND_CHECK(id < tokens.size(), "decode",
                    "token id " + std::to_string(id) + " is outside the vocabulary (size " +
                        std::to_string(tokens.size()) + ")");
        bytes += tokens[id].size();
    }
    std::string out;
    out.reserve(bytes);
    for (uint32_t id : ids) out += tokens[id];
    return out;
}

std::string Tokenizer::decode_text(const std::vector<uint32_t>& ids) const { return replace_invalid_utf8(decode(ids)); }

std::string Tokenizer::hash() const { return impl_->hash; }

const TokenizerSpec& Tokenizer::spec() const { return impl_->spec; }

}  // namespace sixnd
