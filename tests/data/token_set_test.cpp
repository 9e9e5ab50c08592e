// TokenSet over a glob or a data manifest: shards concatenate in order, the manifest's splits
// and token counts are honoured, and bad manifests are named.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <xxhash.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/error.h"
#include "core/hex.h"
#include "core/read_file.h"
#include "data/shard.h"
#include "data/token_set.h"
#include "tests/util/test_util.h"

using namespace sixnd;

namespace {

std::string hash_of(const std::string& path) { return hex64(Shard(path).tokens_hash()); }

void manifest(const std::string& dir, const std::string& train_tokens_claimed, const std::string& first = "train_000000.bin") {
    std::ofstream(dir + "/manifest.json") << R"({"format": "sixnd data manifest", "version": 1,
      "tokenizer": {"hash": "abc"},
      "output": {"train": {"shards": [{"file": ")" << first << R"(", "tokens": )"
                                          << train_tokens_claimed << R"(, "tokens_xxh3_64": ")"
                                          << hash_of(dir + "/train_000000.bin") << R"("},
                                      {"file": "train_000001.bin", "tokens": 3, "tokens_xxh3_64": ")"
                                          << hash_of(dir + "/train_000001.bin") << R"("}]},
                 "val": {"shards": [{"file": "val_000000.bin", "tokens": 2, "tokens_xxh3_64": ")"
                                          << (std::filesystem::exists(dir + "/val_000000.bin") ? hash_of(dir + "/val_000000.bin") : "")
                                          << R"("}]}}})";
}

std::string error_of(const std::string& spec) {
    try {
        TokenSet t(spec);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

// 20,000 tokens counting 0..999 over and over: the shard the truncation tests cut short.
std::vector<uint32_t> counting_tokens() {
    std::vector<uint32_t> tokens(20000);
    for (size_t i = 0; i < tokens.size(); i++) tokens[i] = static_cast<uint32_t>(i % 1000);
    return tokens;
}

}  // namespace

TEST(TokenSet, GlobAndManifestSeeTheSameTokens) {
    const test::TempDir d("sixnd_tokenset_");
    write_shard(d.dir + "/train_000000.bin", {1, 2, 3, 4});
    write_shard(d.dir + "/train_000001.bin", {5, 6, 7});
    write_shard(d.dir + "/val_000000.bin", {8, 9});
    manifest(d.dir, "4");
    TokenSet glob(d.dir + "/train_*.bin"), man(d.dir + "/manifest.json"), val(d.dir + "/manifest.json:val");
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
    const test::TempDir d("sixnd_tokenset_");
    write_shard(d.dir + "/train_000000.bin", {1, 2, 3, 4});
    write_shard(d.dir + "/train_000001.bin", {5, 6, 7});
    manifest(d.dir, "5");
    try {
        TokenSet t(d.dir + "/manifest.json");
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("train_000000.bin: holds 4 tokens but"), std::string::npos) << e.what();
    }
    // A count that is no count is named as such: -1 was read as 2^64 - 1, and 4.5 as 4 (taken).
    for (const char* bad : {"-1", "4.5"}) {
        manifest(d.dir, bad);
        const std::string what = error_of(d.dir + "/manifest.json");
        const std::string want = "the token count of " + d.dir + "/train_000000.bin is " + bad + ", not a whole number";
        EXPECT_NE(what.find("manifest.json: " + want), std::string::npos) << what;
    }
    // Shards given as an object were read as its values, then failed on an index with nlohmann's words.
    std::ofstream(d.dir + "/manifest.json") << R"({"format": "sixnd data manifest", "tokenizer": {},
      "output": {"train": {"shards": {"first": {"file": "train_000000.bin", "tokens": 4}}}}})";
    const std::string what = error_of(d.dir + "/manifest.json");
    EXPECT_NE(what.find("manifest.json: the 'train' split's shards are not a list"), std::string::npos) << what;
    EXPECT_THROW(TokenSet(d.dir + "/manifest.json:test"), Error);
    std::filesystem::create_directory(d.dir + "/bad");
    std::ofstream(d.dir + "/bad/manifest.json") << "{not json";
    EXPECT_THROW(TokenSet(d.dir + "/bad/manifest.json"), Error);
}

// A shard whose tokens changed after the manifest was written (same count, other content) is
// refused, naming the shard and the manifest.
TEST(TokenSet, ManifestHashesAreVerified) {
    const test::TempDir d("sixnd_tokenset_");
    write_shard(d.dir + "/train_000000.bin", {1, 2, 3, 4});
    write_shard(d.dir + "/train_000001.bin", {5, 6, 7});
    manifest(d.dir, "4");
    std::string e = error_of(d.dir + "/manifest.json");
    EXPECT_EQ(e, "");
    // Hex digits in upper case (a hand edit, another tool's writer) are the same hash.
    {
        std::string text = read_whole_file(d.dir + "/manifest.json");
        const std::string lower = hash_of(d.dir + "/train_000000.bin");
        std::string upper = lower;
        for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        ASSERT_NE(upper, lower);
        text.replace(text.find(lower), lower.size(), upper);
        std::ofstream(d.dir + "/manifest.json") << text;
        EXPECT_EQ(error_of(d.dir + "/manifest.json"), "");
    }
    // A shard listed twice (under two spellings) would be read twice an epoch.
    manifest(d.dir, "3", "./train_000001.bin");
    e = error_of(d.dir + "/manifest.json");
    EXPECT_NE(e.find("manifest.json: the 'train' split lists " + d.dir + "/train_000001.bin twice"), std::string::npos) << e;
    manifest(d.dir, "4");
    write_shard(d.dir + "/train_000001.bin", {5, 6, 8});
    e = error_of(d.dir + "/manifest.json");
    EXPECT_NE(e.find("train_000001.bin: content hash"), std::string::npos) << e;
    EXPECT_NE(e.find("manifest.json"), std::string::npos) << e;
}

// Shard names may not leave the manifest's directory: no "..", no absolute path, no link out.
TEST(TokenSet, ManifestPathsAreConfined) {
    const test::TempDir d("sixnd_tokenset_");
    std::filesystem::create_directory(d.dir + "/data");
    std::filesystem::create_directory(d.dir + "/elsewhere");
    write_shard(d.dir + "/elsewhere/train_000000.bin", {1, 2, 3, 4});
    write_shard(d.dir + "/data/train_000000.bin", {1, 2, 3, 4});
    write_shard(d.dir + "/data/train_000001.bin", {5, 6, 7});
    for (const std::string& bad : {std::string("../elsewhere/train_000000.bin"), d.dir + "/elsewhere/train_000000.bin"}) {
        manifest(d.dir + "/data", "4", bad);
        std::string e = error_of(d.dir + "/data/manifest.json");
        EXPECT_NE(e.find("leaves the manifest's directory"), std::string::npos) << bad << ": " << e;
    }
    std::filesystem::create_symlink(d.dir + "/elsewhere", d.dir + "/data/link");
    manifest(d.dir + "/data", "4", "link/train_000000.bin");
    std::string e = error_of(d.dir + "/data/manifest.json");
    EXPECT_NE(e.find("resolves outside"), std::string::npos) << e;
}

// A shard name that cannot be resolved (a link loop inside the manifest's directory) is not said
// to lead outside it: the open names the fault.
TEST(TokenSet, ManifestShardInALinkLoopIsNamed) {
    const test::TempDir d("sixnd_tokenset_");
    std::filesystem::create_symlink("loop_b.bin", d.dir + "/train_000000.bin");
    std::filesystem::create_symlink("train_000000.bin", d.dir + "/loop_b.bin");
    std::ofstream(d.dir + "/manifest.json") << R"({"format": "sixnd data manifest", "tokenizer": {"hash": ""},
      "output": {"train": {"shards": [{"file": "train_000000.bin", "tokens": 4, "tokens_xxh3_64": "0"}]}}})";
    const std::string e = error_of(d.dir + "/manifest.json");
    EXPECT_EQ(e.find("resolves outside"), std::string::npos) << e;
    EXPECT_NE(e.find("train_000000.bin: cannot open token shard: " + std::string(std::strerror(ELOOP))), std::string::npos) << e;
}

// A directory where shards are expected says what to give instead.
TEST(TokenSet, DirectoryIsNamed) {
    const test::TempDir d("sixnd_tokenset_");
    std::string e = error_of(d.dir);
    EXPECT_NE(e.find("is a directory; give a shard glob (" + d.dir + "/*.bin)"), std::string::npos) << e;
    e = error_of(d.dir + "//");
    EXPECT_NE(e.find("give a shard glob (" + d.dir + "/*.bin) or a data manifest (" + d.dir + "/manifest.json)"),
              std::string::npos)
        << e;
    std::filesystem::create_directory(d.dir + "/sub.bin");
    e = error_of(d.dir + "/*.bin");
    EXPECT_NE(e.find("sub.bin: is a directory, not a token shard"), std::string::npos) << e;
}

// A shard truncated while a run reads it (another process rewriting the data in place): the read
// is an Error naming the shard, for 16- and 32-bit shards, not a SIGBUS or zeros as tokens.
TEST(TokenSet, AShardTruncatedWhileReadIsNamed) {
    for (size_t vocab : {size_t(50000), size_t(100000)}) {
        const test::TempDir d("sixnd_tokenset_");
        const std::string path = d.dir + "/train_000000.bin";
        const std::vector<uint32_t> tokens = counting_tokens();
        write_shard(path, tokens, vocab);
        TokenSet t(path);
        std::vector<int32_t> out(100);
        t.read(15000, 100, out.data());
        EXPECT_EQ(out[0], 0);
        std::filesystem::resize_file(path, 1100);
        try {
            t.read(15000, 100, out.data());
            ADD_FAILURE() << "no error for a read of a truncated shard";
        } catch (const Error& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find(path), std::string::npos) << what;
            EXPECT_NE(what.find("shrank from"), std::string::npos) << what;
        }
    }
}

// A shard rewritten in place at the same size after the run checked its tokens, its modification
// time kept (cp -p, rsync -t, or a write within the clock's tick, which core/mapped_file.h's
// check cannot see): a token past the vocabulary is an Error naming the shard and position when
// read, not an index past the embeddings (the CPU embedding lookup faulted on it).
TEST(TokenSet, ATokenRewrittenPastTheVocabularyIsNamed) {
    const test::TempDir d("sixnd_tokenset_");
    const std::string path = d.dir + "/train_000000.bin";
    write_shard(path, std::vector<uint32_t>(2000, 7), 100);
    TokenSet t(path);
    t.check_vocab(100);
    std::vector<int32_t> out(10);
    t.read(500, 10, out.data());
    struct stat before {};
    ASSERT_EQ(::stat(path.c_str(), &before), 0);
    {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(1024 + 2 * 505);
        const uint16_t big = 60000;
        f.write(reinterpret_cast<const char*>(&big), 2);
    }
    const struct timespec kept[2] = {before.st_atim, before.st_mtim};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), kept, 0), 0);
    try {
        t.read(500, 10, out.data());
        ADD_FAILURE() << "no error for a token past the vocabulary";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(path + ": token 60000 at position 505"), std::string::npos) << what;
        EXPECT_NE(what.find("changed after the run checked it"), std::string::npos) << what;
    }
}

// A shard truncated after it was opened but before the run's first full pass over it (the
// vocabulary check, the content hash of the data identity: a minute on large data): an Error
// naming the shard, as for a batch's read, not a SIGBUS.
TEST(TokenSet, AShardTruncatedBeforeItsChecksIsNamed) {
    for (size_t vocab : {size_t(50000), size_t(100000)}) {
        const test::TempDir d("sixnd_tokenset_");
        const std::string path = d.dir + "/train_000000.bin";
        const std::vector<uint32_t> tokens = counting_tokens();
        write_shard(path, tokens, vocab);
        TokenSet vocab_checked(path), hashed(path);
        std::filesystem::resize_file(path, 1100);
        for (const auto& check : std::vector<std::function<void()>>{[&] { vocab_checked.check_vocab(1000); },
                                                                     [&] { hashed.shards()[0].tokens_hash(); }}) {
            try {
                check();
                ADD_FAILURE() << "no error for a pass over a truncated shard";
            } catch (const Error& e) {
                const std::string what = e.what();
                EXPECT_NE(what.find(path + ": the token shard shrank from"), std::string::npos) << what;
            }
        }
        // The hash the data manifest documents: XXH3-64 of the tokens as uint32, whatever the width.
        write_shard(path, tokens, vocab);
        EXPECT_EQ(TokenSet(path).shards()[0].tokens_hash(), XXH3_64bits(tokens.data(), tokens.size() * sizeof(uint32_t)));
    }
}

// The vocabulary check found a token past the tokenizer's (ids of another tokenizer, under the
// model's larger vocabulary) after the shard was truncated: the search for the token that names
// the fault is an Error naming the shard, as a batch's read is, not a SIGBUS. The model's check
// comes first and the tokenizer's after the data identity's pass, as in a run.
TEST(TokenSet, AShardTruncatedBeforeTheTokenizerCheckIsNamed) {
    for (size_t vocab : {size_t(50000), size_t(100000)}) {
        const test::TempDir d("sixnd_tokenset_");
        const std::string path = d.dir + "/train_000000.bin";
        std::vector<uint32_t> tokens(20000, 5);
        std::fill(tokens.begin() + 10000, tokens.end(), 999);
        write_shard(path, tokens, vocab);
        TokenSet t(path);
        t.check_vocab(1000);
        std::filesystem::resize_file(path, 1024 + 4096);
        try {
            t.require_below(500, "is not one of the tokenizer's");
            ADD_FAILURE() << "no error for a search of a truncated shard";
        } catch (const Error& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find(path + ": the token shard shrank from"), std::string::npos) << what;
        }
    }
}
