// The flash-attention launch shape (model/cuda/flash_grid.h): within CUDA's grid limits for any
// batch x heads count, every head served by exactly one block per tile, few spare blocks, and
// a clear error where no launch is possible; the head shapes the kernels take. Plain C++: runs
// without a GPU.
#include <gtest/gtest.h>

#include <climits>
#include <vector>

#include "core/error.h"
#include "model/cuda/flash_grid.h"

using namespace sixnd;
using namespace sixnd::cuda;

namespace {

// Every head index in [0, heads) is reached by exactly one (y, z); the rest are spare.
void expect_covers(long long heads) {
    SCOPED_TRACE("heads " + std::to_string(heads));
    const FlashGrid g = flash_grid(3, heads);
    EXPECT_EQ(g.x, 3u);
    EXPECT_GE(g.y, 1u);
    EXPECT_LE(g.y, 65535u);
    EXPECT_GE(g.z, 1u);
    EXPECT_LE(g.z, 65535u);
    std::vector<int> seen(static_cast<size_t>(heads), 0);
    long long spare = 0;
    for (unsigned z = 0; z < g.z; z++)
        for (unsigned y = 0; y < g.y; y++) {
            long long bh = flash_grid_head(y, z, g.y);
            ASSERT_GE(bh, 0);
            if (bh < heads) seen[static_cast<size_t>(bh)]++;
            else spare++;
        }
    for (long long i = 0; i < heads; i++) ASSERT_EQ(seen[static_cast<size_t>(i)], 1) << "head " << i;
    EXPECT_LT(spare, static_cast<long long>(g.z)) << "more spare blocks than z slices";
}

TEST(FlashGrid, SmallHeadCountsStayInOneSlice) {
    for (long long heads : {1LL, 2LL, 48LL, 1536LL, 65535LL}) {
        FlashGrid g = flash_grid(16, heads);
        EXPECT_EQ(g.y, static_cast<unsigned>(heads));
        EXPECT_EQ(g.z, 1u);
        EXPECT_EQ(g.x, 16u);
    }
}

TEST(FlashGrid, LargeHeadCountsFoldIntoZ) {
    for (long long heads : {65536LL, 70000LL, 131070LL, 131071LL, 1000003LL}) expect_covers(heads);
    FlashGrid g = flash_grid(1, 65536);
    EXPECT_EQ(g.z, 2u);
    EXPECT_EQ(g.y, 32768u);
}

TEST(FlashGrid, LargestIntHeadCountFits) {
    FlashGrid g = flash_grid(1, INT_MAX);
    EXPECT_LE(g.y, 65535u);
    EXPECT_LE(g.z, 65535u);
    EXPECT_GE(static_cast<long long>(g.y) * g.z, static_cast<long long>(INT_MAX));
    EXPECT_LT(static_cast<long long>(g.y) * g.z - INT_MAX, static_cast<long long>(g.z));
    EXPECT_EQ(flash_grid_head(g.y - 1, g.z - 1, g.y), static_cast<long long>(g.y) * g.z - 1);
}

TEST(FlashGrid, RefusesWhatCannotLaunch) {
    for (auto tiles_heads : std::vector<std::pair<long long, long long>>{
             {0, 4}, {4, 0}, {-1, 4}, {4, -3}, {1LL + INT_MAX, 4}, {4, 1LL + INT_MAX}}) {
        try {
            flash_grid(tiles_heads.first, tiles_heads.second);
            ADD_FAILURE() << tiles_heads.first << " x " << tiles_heads.second << " was accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("flash attention"), std::string::npos) << e.what();
        }
    }
}

// Head size 64 or 128 exactly: C not a multiple of NH is refused even where C / NH rounds down
// to a supported size; grouped-query heads must divide NH.
TEST(FlashGrid, HeadShapes) {
    EXPECT_TRUE(flash_heads_supported(768, 12, 12));
    EXPECT_TRUE(flash_heads_supported(1024, 8, 2));
    EXPECT_TRUE(flash_heads_supported(64, 1, 1));
    EXPECT_FALSE(flash_heads_supported(129, 2, 2));  // 129 / 2 = 64 in integers
    EXPECT_FALSE(flash_heads_supported(257, 2, 1));
    EXPECT_FALSE(flash_heads_supported(768, 12, 5));
    EXPECT_FALSE(flash_heads_supported(768, 12, 0));
    EXPECT_FALSE(flash_heads_supported(768, 0, 1));
    EXPECT_FALSE(flash_heads_supported(384, 12, 12));  // head size 32
}

}  // namespace
