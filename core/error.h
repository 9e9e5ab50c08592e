// The one error type: it names where the fault is (a file, a flag, a config key) and what the
// fault is, so that every bad input ends in a single message a user can act on.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace sixnd {

class Error : public std::runtime_error {
public:
    Error(std::string where, std::string fault)
        : std::runtime_error(where.empty() ? fault : where + ": " + fault),
          where_(std::move(where)), fault_(std::move(fault)) {}
    const std::string& where() const { return where_; }
    const std::string& fault() const { return fault_; }

private:
    std::string where_;
    std::string fault_;
};

// An error every rank of a job throws at the same step for the same reason, since they agreed on
// it (a signal's stop, and the signal, are gathered from every rank). Under mpirun rank 0 prints
// it and the other ranks exit non-zero without a line of their own, so the job says it once.
class AgreedError : public Error {
public:
    using Error::Error;
};

// Input quoted in a message, cut to its first max_chars bytes ("..." marks the cut): a message
// stays one readable line when the offending line is a megabyte of minified JSON. The cut moves
// back to the start of a UTF-8 character (by at most the three bytes one continues for), so that
// valid text is never quoted as the \xNN of half a character.
inline std::string excerpt(std::string_view text, size_t max_chars = 60) {
    if (text.size() <= max_chars) return std::string(text);
    size_t keep = max_chars;
    for (int back = 0; back < 3 && keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80; back++) keep--;
    return std::string(text.substr(0, keep)) + "...";
}

// Checks an invariant of an input; the message is only built when the check fails.
#define SIXND_CHECK(cond, where, fault)                          \
    do {                                                         \
        if (!(cond)) throw ::sixnd::Error((where), (fault));     \
    } while (0)

}  // namespace sixnd
