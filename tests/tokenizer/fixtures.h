// Helpers shared by the tokenizer tests: where the fixtures are, and GPT-2's tokenizer built
// from them once per test binary.
#pragma once
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "tests/util/test_util.h"
#include "tokenizer/gpt2_import.h"
#include "tokenizer/pretokenizer.h"

namespace sixnd::test {

inline std::string tokenizer_fixtures() {
    std::string dir = shared_fixtures_dir();
    return dir.empty() ? "" : dir + "/tokenizer";
}

inline std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline void spit(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
}

// nullptr when the fixtures are absent.
inline const Tokenizer* gpt2_tokenizer() {
    static std::unique_ptr<Tokenizer> tok = [] {
        std::string dir = tokenizer_fixtures();
        if (dir.empty()) return std::unique_ptr<Tokenizer>();
        return std::make_unique<Tokenizer>(import_gpt2(dir + "/gpt2_vocab.json", dir + "/gpt2_merges.txt",
                                                       {"<|endoftext|>"}, resolve_pattern("gpt2")));
    }();
    return tok.get();
}

#define SIXND_NEED_FIXTURES()                                                                  \
    do {                                                                                       \
        if (::sixnd::test::tokenizer_fixtures().empty())                                       \
            GTEST_SKIP() << "shared fixtures not found (set SIXND_SHARED to ../shared)";       \
    } while (0)

}  // namespace sixnd::test
