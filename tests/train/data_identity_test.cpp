// What a resume says when the training shards differ from the checkpoint's: the shard that
// differs is named, whether it was rewritten with as many tokens or another count, removed or
// added, so that a user with many shards knows which file to look at. And a validation shard
// that is also a training shard is found.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "data/shard.h"
#include "data/token_set.h"
#include "tests/util/test_util.h"
#include "train/data_identity.h"

using namespace sixnd;

namespace {

std::vector<uint32_t> tokens(size_t n, uint32_t salt) {
    std::vector<uint32_t> t(n);
    for (size_t i = 0; i < n; i++) t[i] = static_cast<uint32_t>((i * 7 + salt) % 251);
    return t;
}

nlohmann::json identity(const std::string& dir) { return data_json(TokenSet(dir + "/s_*.bin")); }

bool says(const std::string& change, const std::string& part) { return change.find(part) != std::string::npos; }

}  // namespace

TEST(DataIdentity, TheChangedShardIsNamed) {
    const test::TempDir d("sixnd_identity_");
    const std::string dir = d.dir;
    write_shard(dir + "/s_0.bin", tokens(40, 1));
    write_shard(dir + "/s_1.bin", tokens(37, 2));
    write_shard(dir + "/s_2.bin", tokens(50, 3));
    const nlohmann::json then = identity(dir);
    EXPECT_EQ(data_change(then, identity(dir)), "");

    write_shard(dir + "/s_1.bin", tokens(37, 9));
    std::string c = data_change(then, identity(dir));
    EXPECT_TRUE(says(c, "s_1.bin changed in place (37 tokens")) << c;

    write_shard(dir + "/s_1.bin", tokens(30, 2));
    c = data_change(then, identity(dir));
    EXPECT_TRUE(says(c, "s_1.bin changed in place (37 -> 30 tokens")) << c;

    std::remove((dir + "/s_1.bin").c_str());
    c = data_change(then, identity(dir));
    EXPECT_TRUE(says(c, "3 shards (s_0.bin .. s_2.bin, 127 tokens) -> 2 shards (s_0.bin .. s_2.bin, 90 tokens)")) << c;
    EXPECT_TRUE(says(c, "first difference at shard 2: s_1.bin (37 tokens) -> s_2.bin (50 tokens)")) << c;

    write_shard(dir + "/s_1.bin", tokens(37, 2));
    write_shard(dir + "/s_3.bin", tokens(5, 4));
    c = data_change(then, identity(dir));
    EXPECT_TRUE(says(c, "first difference at shard 4: none -> s_3.bin (5 tokens)")) << c;
}

// A validation shard that is a training shard is found whether it is the same file (another
// spelling, a hard link) or a copy of its tokens; a shard of as many other tokens, or two empty
// ones, are not the same data.
TEST(DataIdentity, AValidationShardInTheTrainingSetIsFound) {
    const test::TempDir d("sixnd_identity_");
    const std::string dir = d.dir;
    write_shard(dir + "/s_0.bin", tokens(40, 1));
    write_shard(dir + "/s_1.bin", tokens(37, 2));
    write_shard(dir + "/s_2.bin", {});
    const TokenSet train(dir + "/s_*.bin");
    write_shard(dir + "/v_0.bin", tokens(37, 5));
    write_shard(dir + "/v_1.bin", {});
    EXPECT_EQ(shard_in_both(train, TokenSet(dir + "/v_*.bin")), "");
    EXPECT_EQ(shard_in_both(train, TokenSet(dir + "/./s_1.bin")), dir + "/./s_1.bin");
    std::filesystem::create_hard_link(dir + "/s_0.bin", dir + "/v_2.bin");
    EXPECT_EQ(shard_in_both(train, TokenSet(dir + "/v_*.bin")), dir + "/v_2.bin");
    std::filesystem::remove(dir + "/v_2.bin");
    write_shard(dir + "/v_3.bin", tokens(37, 2));
    EXPECT_EQ(shard_in_both(train, TokenSet(dir + "/v_*.bin")), dir + "/v_3.bin");
}
