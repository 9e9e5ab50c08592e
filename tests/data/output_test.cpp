// Shards written by the pipeline's writer pass the loader (data/shard.h) and llm.c's rules:
// header magic and version, token count, file size; every shard but the last is full.
#include "data/output.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "data/shard.h"
#include "tests/util/test_util.h"

using namespace sixnd::data;

namespace {

std::vector<int32_t> header(const std::string& path) {
    std::vector<int32_t> h(256);
    FILE* f = std::fopen(path.c_str(), "rb");
    EXPECT_EQ(std::fread(h.data(), 4, 256, f), 256u);
    std::fclose(f);
    return h;
}

}  // namespace

TEST(Output, ShardsFollowLlmcRules) {
    const sixnd::test::TempDir tmp("shards");
    const std::string& dir = tmp.dir;
    const uint32_t eot = 50256;
    ShardWriter w(dir, "train", 1000, eot, 50257);
    std::vector<uint32_t> expect;
    for (uint32_t d = 0; d < 37; d++) {
        std::vector<uint32_t> doc(40 + d * 3);
        for (size_t i = 0; i < doc.size(); i++) doc[i] = (d * 131 + static_cast<uint32_t>(i)) % 50000;
        w.add_document(doc.data(), doc.size());
        expect.push_back(eot);
        expect.insert(expect.end(), doc.begin(), doc.end());
    }
    w.finish();
    ASSERT_EQ(w.tokens(), expect.size());
    ASSERT_EQ(w.shards().size(), (expect.size() + 999) / 1000);
    std::vector<uint32_t> got;
    for (size_t s = 0; s < w.shards().size(); s++) {
        std::string path = dir + "/" + w.shards()[s].file;
        EXPECT_EQ(w.shards()[s].file, "train_00000" + std::to_string(s) + ".bin");
        auto h = header(path);
        EXPECT_EQ(h[0], 20240520);
        EXPECT_EQ(h[1], 1);
        EXPECT_EQ(static_cast<uint64_t>(h[2]), w.shards()[s].tokens);
        EXPECT_EQ(std::filesystem::file_size(path), 1024 + 2 * w.shards()[s].tokens);
        if (s + 1 < w.shards().size()) {
            EXPECT_EQ(w.shards()[s].tokens, 1000u);
        }
        sixnd::Shard shard(path);
        for (size_t i = 0; i < shard.size(); i++) got.push_back(shard[i]);
    }
    EXPECT_EQ(got, expect);
}

// A shard's tokens went to memory until the shard was full: 6 bytes a token, gigabytes at
// --shard-tokens 2^31-1. They reach its file as they come; the recorded hash is still the
// shard's (Shard::tokens_hash).
TEST(Output, TokensReachTheFileAsTheyCome) {
    const sixnd::test::TempDir tmp("shards");
    const std::string& dir = tmp.dir;
    ShardWriter w(dir, "train", 2147483647, 7, 300);
    std::vector<uint32_t> doc(1 << 20);
    for (size_t i = 0; i < doc.size(); i++) doc[i] = static_cast<uint32_t>(i % 300);
    w.add_document(doc.data(), doc.size());
    uintmax_t on_disk = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) on_disk += e.file_size();
    EXPECT_GE(on_disk, doc.size());  // 2 bytes a token, less what stdio still buffers
    w.add_document(doc.data(), 5);
    w.finish();
    ASSERT_EQ(w.shards().size(), 1u);
    sixnd::Shard shard(dir + "/" + w.shards()[0].file);
    EXPECT_EQ(shard.size(), doc.size() + 7);
    EXPECT_EQ(shard[0], 7u);
    EXPECT_EQ(shard[doc.size() + 1], 7u);
    EXPECT_EQ(w.shards()[0].hash, shard.tokens_hash());
}

// Shards cut mid-document: each recorded hash is of that shard's tokens alone.
TEST(Output, HashesFollowTheCut) {
    const sixnd::test::TempDir tmp("shards");
    const std::string& dir = tmp.dir;
    ShardWriter w(dir, "train", 10, 0, 300);
    std::vector<uint32_t> doc(23, 5);
    w.add_document(doc.data(), doc.size());
    w.finish();
    ASSERT_EQ(w.shards().size(), 3u);
    for (const auto& s : w.shards()) EXPECT_EQ(s.hash, sixnd::Shard(dir + "/" + s.file).tokens_hash()) << s.file;
}

TEST(Output, WideVocabulariesUseVersion7) {
    const sixnd::test::TempDir tmp("shards");
    const std::string& dir = tmp.dir;
    ShardWriter w(dir, "val", 100, 70000, 70001);
    std::vector<uint32_t> doc = {1, 2, 3};
    w.add_document(doc.data(), doc.size());
    w.finish();
    auto h = header(dir + "/val_000000.bin");
    EXPECT_EQ(h[0], 20240801);
    EXPECT_EQ(h[1], 7);
    sixnd::Shard s(dir + "/val_000000.bin");
    EXPECT_EQ(s[0], 70000u);
}

// The width follows the vocabulary, not the tokens written: a data set of a wide vocabulary
// is uint32 in every shard, even one whose tokens all happen to be small.
TEST(Output, WidthFollowsTheVocabulary) {
    const sixnd::test::TempDir tmp("shards");
    const std::string& dir = tmp.dir;
    sixnd::write_shard(dir + "/wide.bin", {1, 2, 3}, 70001);
    sixnd::write_shard(dir + "/narrow.bin", {1, 2, 65535}, 65536);
    EXPECT_EQ(header(dir + "/wide.bin")[0], 20240801);
    EXPECT_EQ(header(dir + "/narrow.bin")[0], 20240520);
    EXPECT_EQ(sixnd::Shard(dir + "/narrow.bin")[2], 65535u);
    EXPECT_THROW(sixnd::write_shard(dir + "/bad.bin", {1, 65536}, 65536), sixnd::Error);
    EXPECT_FALSE(std::filesystem::exists(dir + "/bad.bin"));
}

TEST(Output, SpoolRoundTrips) {
    const sixnd::test::TempDir tmp("spool");
    const std::string& dir = tmp.dir;
    TokenSpool sp(dir + "/t.tmp");
    EXPECT_EQ(sp.append({5, 6, 7}), 0u);
    EXPECT_EQ(sp.append({}), 1u);
    EXPECT_EQ(sp.append({9}), 2u);
    sp.finish();
    size_t n = 0;
    const uint32_t* t = sp.doc(0, n);
    ASSERT_EQ(n, 3u);
    EXPECT_EQ(t[2], 7u);
    sp.doc(1, n);
    EXPECT_EQ(n, 0u);
    t = sp.doc(2, n);
    EXPECT_EQ(t[0], 9u);
}
