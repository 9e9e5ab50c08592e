// The data loader against a reference written from the documented format and order, not from
// the loader: shards read as raw llm.c files (256 int32 header, then uint16 or uint32 tokens),
// concatenated in path order; sample i is tokens [i*T, i*T + T + 1); global micro-batch k of an
// epoch is samples [k*W*B, (k+1)*W*B), rank r taking the r-th block of B; a step is A such
// micro-batches, and an epoch ends when fewer than a step's W*B*A samples remain. Shards of uneven sizes, empty ones and ones shorter than a row
// make rows that straddle shard ends, which is where an index slip would show.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>

#include "core/error.h"
#include "core/rng.h"
#include "data/loader.h"
#include "data/shard.h"
#include "tests/util/test_util.h"

using namespace sixnd;

namespace {

std::vector<uint32_t> read_raw_shard(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    int32_t h[3];
    std::memcpy(h, bytes.data(), sizeof h);
    const size_t width = h[0] == 20240520 ? 2 : 4;
    std::vector<uint32_t> out(static_cast<size_t>(h[2]));
    for (size_t i = 0; i < out.size(); i++) {
        uint32_t v = 0;
        std::memcpy(&v, bytes.data() + 1024 + i * width, width);  // little-endian, as llm.c writes
        out[i] = v;
    }
    return out;
}

struct Data {
    test::TempDir dir{"sixnd_loader_"};
    std::vector<uint32_t> stream;  // every shard's tokens, in path order
    std::string glob() const { return dir.dir + "/s_*.bin"; }
};

// Shards of `sizes` tokens (vocabulary `vocab`), read back through the reference reader.
std::unique_ptr<Data> make_data(const std::vector<size_t>& sizes, size_t vocab = kShardU16Vocab) {
    auto d = std::make_unique<Data>();
    Rng rng(sizes.size() * 131 + vocab);
    for (size_t s = 0; s < sizes.size(); s++) {
        std::vector<uint32_t> t(sizes[s]);
        for (auto& x : t) x = static_cast<uint32_t>(rng.below(vocab));
        char name[32];
        std::snprintf(name, sizeof name, "/s_%03zu.bin", s);
        write_shard(d->dir.dir + name, t, vocab);
        const std::vector<uint32_t> back = read_raw_shard(d->dir.dir + name);
        d->stream.insert(d->stream.end(), back.begin(), back.end());
    }
    return d;
}

struct Batch {
    std::vector<int32_t> in, tg;
    std::vector<uint64_t> samples;
};

Batch next_of(DataLoader& l, int B, int T) {
    Batch b{std::vector<int32_t>(static_cast<size_t>(B) * T), std::vector<int32_t>(static_cast<size_t>(B) * T), {}};
    l.next(b.in.data(), b.tg.data());
    b.samples = l.last_samples();
    return b;
}

// The rows of `samples` as the format and the sample rule define them.
Batch expected_rows(const std::vector<uint32_t>& stream, const std::vector<uint64_t>& samples, int T) {
    Batch b;
    b.samples = samples;
    for (uint64_t s : samples)
        for (int t = 0; t < T; t++) {
            b.in.push_back(static_cast<int32_t>(stream.at(s * T + t)));
            b.tg.push_back(static_cast<int32_t>(stream.at(s * T + t + 1)));
        }
    return b;
}

void expect_same(const Batch& got, const Batch& want, const std::string& what) {
    EXPECT_EQ(got.samples, want.samples) << what;
    EXPECT_EQ(got.in, want.in) << what;
    EXPECT_EQ(got.tg, want.tg) << what;
}

}  // namespace

// Unshuffled, every rank's batch is the reference's, through several epochs, over uneven shards
// (empty ones, ones shorter than a row) in both token widths. With several micro-batches a step
// (the last two cases) the epoch ends micro-batches earlier than W*B alone would end it.
TEST(Loader, UnshuffledBatchesAreTheDocumentedTokens) {
    struct Case {
        std::vector<size_t> sizes;
        size_t vocab;
        int B, T, world, accum;
    };
    const std::vector<Case> cases = {
        {{37, 5, 0, 61, 12, 90, 3}, kShardU16Vocab, 2, 8, 1, 1},
        {{37, 5, 0, 61, 12, 90, 3}, kShardU16Vocab, 1, 5, 3, 1},
        {{1, 2, 1, 40, 0, 7}, 70000, 2, 3, 2, 1},
        {{9}, kShardU16Vocab, 1, 8, 1, 1},  // exactly one row: every batch is it
        {{37, 5, 0, 61, 12, 90, 3}, kShardU16Vocab, 2, 8, 1, 5},  // 25 samples: 2 steps of 10, not 12 micro-batches
        {{37, 5, 0, 61, 12, 90, 3}, kShardU16Vocab, 1, 5, 2, 3},  // 41 samples: 6 steps of 6, not 20 micro-batches
    };
    for (const Case& c : cases) {
        const auto d = make_data(c.sizes, c.vocab);
        const uint64_t samples = (d->stream.size() - 1) / c.T, G = static_cast<uint64_t>(c.world) * c.B;
        const uint64_t per_epoch = samples / (G * c.accum) * c.accum;
        for (int r = 0; r < c.world; r++) {
            DataLoader l(d->glob(), c.B, c.T, r, c.world, c.accum, false, 0);
            ASSERT_EQ(l.samples_per_epoch(), samples);
            for (uint64_t k = 0; k < 3 * per_epoch + 1; k++) {
                std::vector<uint64_t> rows;
                for (int b = 0; b < c.B; b++) rows.push_back((k % per_epoch) * G + static_cast<uint64_t>(r) * c.B + b);
                expect_same(next_of(l, c.B, c.T), expected_rows(d->stream, rows, c.T),
                            "T " + std::to_string(c.T) + " world " + std::to_string(c.world) + " rank " +
                                std::to_string(r) + " micro-batch " + std::to_string(k));
                EXPECT_EQ(l.state().epoch, k / per_epoch);
            }
        }
    }
}

// Shuffled, each epoch the ranks together read distinct samples, all of them but fewer than one
// global micro-batch, each row holding its sample's tokens; epochs differ, and every rank draws
// the same order.
TEST(Loader, ShuffledEpochsArePermutationsSplitAcrossRanks) {
    const auto d = make_data({37, 5, 0, 61, 12, 90, 3, 44});
    const int B = 2, T = 4, W = 3;
    std::vector<std::unique_ptr<DataLoader>> ranks;
    for (int r = 0; r < W; r++) ranks.push_back(std::make_unique<DataLoader>(d->glob(), B, T, r, W, 1, true, 42));
    const uint64_t samples = ranks[0]->samples_per_epoch(), per_epoch = samples / (W * B);
    std::vector<std::vector<uint64_t>> epochs(3);
    for (auto& e : epochs)
        for (uint64_t k = 0; k < per_epoch; k++)
            for (auto& l : ranks) {
                const Batch b = next_of(*l, B, T);
                expect_same(b, expected_rows(d->stream, b.samples, T), "shuffled rows");
                e.insert(e.end(), b.samples.begin(), b.samples.end());
            }
    for (const auto& e : epochs) {
        const std::set<uint64_t> distinct(e.begin(), e.end());
        EXPECT_EQ(distinct.size(), e.size());
        EXPECT_EQ(e.size(), per_epoch * W * B);
        EXPECT_LT(*distinct.rbegin(), samples);
        EXPECT_GT(e.size() + W * B, samples);
    }
    EXPECT_NE(epochs[0], epochs[1]);
    EXPECT_NE(epochs[1], epochs[2]);
}

// A loader given another's position (a resume, at any point of any epoch, inside a step too)
// continues with exactly the batches the first one serves next; so does one moved on by
// advance() (a rollback's skip).
TEST(Loader, ResumedAndAdvancedPositionsContinueTheSameBatches) {
    const auto d = make_data({37, 5, 0, 61, 12});
    const int B = 2, T = 4;
    for (int A : {1, 3})
        for (bool shuffle : {false, true})
            for (uint64_t cut = 0; cut < 20; cut++) {
                DataLoader a(d->glob(), B, T, 1, 2, A, shuffle, 9), jumped(d->glob(), B, T, 1, 2, A, shuffle, 9);
                for (uint64_t k = 0; k < cut; k++) next_of(a, B, T);
                DataLoader resumed(d->glob(), B, T, 1, 2, A, shuffle, 9);
                resumed.set_state(a.state());
                jumped.advance(cut);
                EXPECT_EQ(jumped.state().epoch, a.state().epoch);
                EXPECT_EQ(jumped.state().cursor, a.state().cursor);
                for (int k = 0; k < 12; k++) {
                    const Batch want = next_of(a, B, T);
                    const std::string what = std::string(shuffle ? "shuffled" : "in order") + ", accum " + std::to_string(A) +
                                             ", cut " + std::to_string(cut);
                    expect_same(next_of(resumed, B, T), want, "resumed " + what);
                    expect_same(next_of(jumped, B, T), want, "advanced " + what);
                }
            }
}

TEST(Loader, RefusesDataShorterThanOneStep) {
    const auto d = make_data({4, 0, 4});  // 8 tokens: one row of 7 (+1), not two of 4 (+1)
    EXPECT_NO_THROW(DataLoader(d->glob(), 1, 7, 0, 1, 1, false, 0));
    try {
        DataLoader(d->glob(), 2, 4, 0, 1, 1, false, 0);
        ADD_FAILURE() << "two rows of 4 (+1) from 8 tokens";
    } catch (const Error& e) {
        EXPECT_EQ(e.where(), d->glob());
        EXPECT_NE(e.fault().find("holds 8 tokens"), std::string::npos) << e.fault();
    }
    EXPECT_THROW(DataLoader(d->glob(), 1, 4, 1, 2, 1, false, 0), Error);  // one row for each of two ranks
    EXPECT_NO_THROW(DataLoader(d->glob(), 1, 3, 0, 1, 2, false, 0));    // two rows of 3 (+1): a step of 2 micro-batches
    try {
        DataLoader(d->glob(), 1, 3, 0, 1, 3, false, 0);
        ADD_FAILURE() << "a step of three rows of 3 (+1) from 8 tokens";
    } catch (const Error& e) {
        EXPECT_NE(e.fault().find("fewer than one step of 3 x 1 x 1 x 3"), std::string::npos) << e.fault();
    }
    const auto empty = make_data({0, 0});
    EXPECT_THROW(DataLoader(empty->glob(), 1, 1, 0, 1, 1, false, 0), Error);
}

// A shard whose path holds glob characters ("run[1]/train_*.bin" is a pattern that matches no
// "run1") is still named by its literal path; a pattern matching nothing is still an error.
TEST(ExpandGlob, ALiteralPathWithGlobCharactersNamesItself) {
    const test::TempDir t("sixnd_glob_");
    const std::string dir = t.dir + "/run[1]";
    ASSERT_TRUE(std::filesystem::create_directory(dir));
    write_shard(dir + "/train.bin", {1, 2, 3});
    EXPECT_EQ(expand_glob(dir + "/train.bin"), std::vector<std::string>{dir + "/train.bin"});
    try {
        expand_glob(dir + "/val.bin");
        ADD_FAILURE() << "a missing literal path matched";
    } catch (const Error& e) {
        EXPECT_EQ(e.fault(), "no files match");
    }
}

// A directory the pattern must list but cannot (a link loop here; for other users also one they
// may not read) is named with the reason, rather than "no files match" or, where the pattern
// reaches other directories, a silent match of only their shards.
TEST(ExpandGlob, AnUnlistableDirectoryIsNamed) {
    const test::TempDir t("sixnd_glob_");
    ASSERT_TRUE(std::filesystem::create_directory(t.dir + "/a"));
    write_shard(t.dir + "/a/train.bin", {1, 2, 3});
    std::filesystem::create_symlink("loop", t.dir + "/loop");
    try {
        const std::vector<std::string> got = expand_glob(t.dir + "/loop/*.bin");
        ADD_FAILURE() << "matched " << got.size() << " file(s) in a link loop";
    } catch (const Error& e) {
        EXPECT_EQ(e.where(), t.dir + "/loop");
        EXPECT_NE(e.fault().find(t.dir + "/loop/*.bin"), std::string::npos) << e.fault();
        EXPECT_NE(e.fault().find(std::strerror(ELOOP)), std::string::npos) << e.fault();
    }
    // A literal name behind the loop: glob() reports nothing, yet the fault is the loop.
    try {
        expand_glob(t.dir + "/loop/train.bin");
        ADD_FAILURE() << "a name behind a link loop matched";
    } catch (const Error& e) {
        EXPECT_EQ(e.where(), t.dir + "/loop/train.bin");
        EXPECT_NE(e.fault().find(std::strerror(ELOOP)), std::string::npos) << e.fault();
    }
    EXPECT_EQ(expand_glob(t.dir + "/a/*.bin"), std::vector<std::string>{t.dir + "/a/train.bin"});
    try {
        expand_glob(t.dir + "/none/*.bin");
        ADD_FAILURE() << "a missing directory matched";
    } catch (const Error& e) {
        EXPECT_EQ(e.fault(), "no files match");
    }
}
