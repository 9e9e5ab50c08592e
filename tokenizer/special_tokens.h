// Finding special tokens (e.g. <|endoftext|>) in text, before pre-tokenization, so that they are
// never split or merged with their neighbours.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sixnd {

class SpecialTokens {
public:
    struct Match {
        size_t pos;
        size_t len;
        uint32_t id;
    };

    SpecialTokens() = default;
    explicit SpecialTokens(std::vector<std::pair<std::string, uint32_t>> tokens);

    bool empty() const { return tokens_.empty(); }
    size_t max_len() const { return max_len_; }

    // The leftmost special token starting at or after `from`; of those starting there, the
    // longest (so "<|a|><|a|>" wins over "<|a|>" when both are special).
    std::optional<Match> find(std::string_view text, size_t from) const;

    // Every special token encode() matches in text, in order: find() again and again from the
    // start of text, each time past the last match. An occurrence that overlaps an earlier match
    // is not among them, and whether one is depends on every match before it, however far back:
    // with "xyz", "zw" and "w q" special, "xyzw q" holds "xyz" then "w q", though "zw" is there.
    std::vector<Match> find_all(std::string_view text) const;

private:
    std::vector<std::pair<std::string, uint32_t>> tokens_;  // longest first
    std::array<bool, 256> first_{};
    int single_first_ = -1;  // the only first byte, when all tokens share one (memchr then)
    size_t max_len_ = 0;
};

}  // namespace sixnd
