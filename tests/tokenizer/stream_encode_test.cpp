// Streaming encode of a multi-megabyte file: the ids equal one encode() of the whole text, and
// the text held in memory stays a small multiple of the chunk size; progress reports counts that
// only grow and end at the totals.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "tests/tokenizer/fixtures.h"
#include "tokenizer/stream_encoder.h"

using namespace sixnd;
using namespace sixnd::test;

TEST(StreamEncode, MultiMegabyteFileEqualsOneShotInBoundedMemory) {
    SIXND_NEED_FIXTURES();
    const Tokenizer& tok = *gpt2_tokenizer();
    std::string base = slurp(tokenizer_fixtures() + "/corpus.en") + slurp(tokenizer_fixtures() + "/german.txt");
    std::mt19937_64 rng(3);
    std::string text;
    while (text.size() < (size_t(3) << 20)) {
        size_t at = rng() % base.size();
        text += base.substr(at, 2000 + rng() % 4000);
        if (rng() % 4 == 0) text += "<|endoftext|>";
        if (rng() % 8 == 0) text += "\n\n   \t";
    }
    const TempDir tmp("sixnd-stream-");
    const std::string& dir = tmp.dir;
    spit(dir + "/big.txt", text);

    const size_t chunk = 64 << 10;
    std::vector<uint32_t> streamed;
    std::vector<EncodeStats> reports;
    EncodeStats s = encode_stream(
        tok, {{dir + "/big.txt"}}, 2, chunk,
        [&](const std::vector<uint32_t>& ids) { streamed.insert(streamed.end(), ids.begin(), ids.end()); },
        [&](const EncodeStats& so_far) {
            EXPECT_EQ(so_far.tokens, streamed.size());
            reports.push_back(so_far);
        });

    ASSERT_GE(reports.size(), text.size() / chunk / 2);  // one per batch of two chunks
    for (size_t i = 1; i < reports.size(); i++) {
        EXPECT_GT(reports[i].bytes, reports[i - 1].bytes);
        EXPECT_GE(reports[i].tokens, reports[i - 1].tokens);
    }
    EXPECT_EQ(reports.back().bytes, s.bytes);
    EXPECT_EQ(reports.back().tokens, s.tokens);

    EXPECT_EQ(s.bytes, text.size());
    EXPECT_EQ(s.tokens, streamed.size());
    EXPECT_LE(s.peak_buffer_bytes, 6 * chunk);
    EXPECT_EQ(streamed, tok.encode(text));
}

// Text in other scripts has no ASCII letters around its spaces and newlines: it used to be one
// chunk per file (memory as large as the file, one thread). Lines of Cyrillic, Greek, Chinese and
// Hindi are now cut after their newlines, with the ids unchanged.
TEST(StreamEncode, NonLatinTextIsCutIntoChunks) {
    SIXND_NEED_FIXTURES();
    const Tokenizer& tok = *gpt2_tokenizer();
    const char* lines[] = {"\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82, \xd0\xbc\xd0\xb8\xd1\x80",  // Привет, мир
                           "\xce\x9a\xce\xb1\xce\xbb\xce\xb7\xce\xbc\xce\xad\xcf\x81\xce\xb1",              // Καλημέρα
                           "\xe4\xb8\xad\xe6\x96\x87\xe6\x96\x87\xe6\x9c\xac\xe3\x80\x82",                  // 中文文本。
                           "\xe0\xa4\xa8\xe0\xa4\xae\xe0\xa4\xb8\xe0\xa5\x8d\xe0\xa4\xa4\xe0\xa5\x87"};     // नमस्ते
    std::mt19937_64 rng(5);
    std::string text;
    while (text.size() < (size_t(1) << 20)) text += std::string(lines[rng() % 4]) + (rng() % 3 ? "\n" : "\n\n");
    const TempDir tmp("sixnd-stream-");
    spit(tmp.dir + "/other.txt", text);
    const size_t chunk = 16 << 10;
    std::vector<uint32_t> streamed;
    EncodeStats s = encode_stream(tok, {{tmp.dir + "/other.txt"}}, 2, chunk, [&](const std::vector<uint32_t>& ids) {
        streamed.insert(streamed.end(), ids.begin(), ids.end());
    });
    EXPECT_LE(s.peak_buffer_bytes, 6 * chunk);
    EXPECT_EQ(streamed, tok.encode(text));
}
