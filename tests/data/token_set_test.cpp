// TokenSet over a glob or a data manifest: shards concatenate in order, the manifest's splits
// and token counts are honoured, and bad manifests are named.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "data/shard.h"
#include "data/token_set.h"
#include "tests/util/test_util.h"

using namespace sixnd;

namespace {

struct Dir {
    std::string path = test::make_temp_dir("sixnd_tokenset_");
    ~Dir() { std::filesystem::remove_all(path); }
};

void manifest(const std::string& dir, int train_tokens_claimed) {
    std::ofstream(dir + "/manifest.json") << R"({"format": "sixnd data manifest", "version": 1,
      "tokenizer": {"hash": "abc"},
      "output": {"train": {"shards": [{"file": "train_000000.bin", "tokens": )"
                                          << train_tokens_claimed << R"(},
                                      {"file": "train_000001.bin", "tokens": 3}]},
                 "val": {"shards": [{"file": "val_000000.bin", "tokens": 2}]}}})";
}

}  // namespace

TEST(TokenSet, GlobAndManifestSeeTheSameTokens) {
    Dir d;
    write_shard(d.path + "/train_000000.bin", {1, 2, 3, 4});
    write_shard(d.path + "/train_000001.bin", {5, 6, 7});
    write_shard(d.path + "/val_000000.bin", {8, 9});
    manifest(d.path, 4);
    TokenSet glob(d.path + "/train_*.bin"), man(d.path + "/manifest.json"), val(d.path + "/manifest.json:val");
    ASSERT_EQ(glob.size(), 7u);
    ASSERT_EQ(man.size(), 7u);
    std::vector<int32_t> a(6), b(6);
    glob.read(1, 6, a.data());
    man.read(1, 6, b.data());
    EXPECT_EQ(a, (std::vector<int32_t>{2, 3, 4, 5, 6, 7}));
    EXPECT_EQ(a, b);
    EXPECT_EQ(man.tokenizer_hash(), "abc");
    EXPECT_EQ(glob.tokenizer_hash(), "");
    EXPECT_EQ(val.size(), 2u);
}

TEST(TokenSet, ManifestFaultsAreNamed) {
    Dir d;
    write_shard(d.path + "/train_000000.bin", {1, 2, 3, 4});
    write_shard(d.path + "/train_000001.bin", {5, 6, 7});
    manifest(d.path, 5);
    try {
        TokenSet t(d.path + "/manifest.json");
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("train_000000.bin: holds 4 tokens but"), std::string::npos) << e.what();
    }
    EXPECT_THROW(TokenSet(d.path + "/manifest.json:test"), Error);
    std::filesystem::create_directory(d.path + "/bad");
    std::ofstream(d.path + "/bad/manifest.json") << "{not json";
    EXPECT_THROW(TokenSet(d.path + "/bad/manifest.json"), Error);
}
