// The rank and world size an MPI launcher gives in its environment: the first of its variables
// that is set wins. Rank 0 of an Open MPI job (OMPI_COMM_WORLD_RANK=0) with a PMI_RANK left from
// an outer job took that one, a value above 0 being read as "set".
#include <gtest/gtest.h>

#include <cstdlib>

#include "dist/comm.h"

namespace {

const char* const kVars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS",
                             "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};

class LauncherEnv : public ::testing::Test {
protected:
    void SetUp() override {
        for (const char* v : kVars) unsetenv(v);
    }
    void TearDown() override { SetUp(); }
};

}  // namespace

TEST_F(LauncherEnv, NoLauncherIsOneRankZero) {
    EXPECT_EQ(sixnd::launched_world_size(), 1);
    EXPECT_EQ(sixnd::launched_world_rank(), 0);
    EXPECT_FALSE(sixnd::launched_under_mpi());
}

TEST_F(LauncherEnv, TheLaunchersOwnVariablesWinOverLeftOnes) {
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    setenv("PMI_SIZE", "8", 1);
    setenv("PMI_RANK", "5", 1);
    EXPECT_EQ(sixnd::launched_world_size(), 2);
    EXPECT_EQ(sixnd::launched_world_rank(), 0);
    setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
    EXPECT_EQ(sixnd::launched_world_size(), 1);
    EXPECT_FALSE(sixnd::launched_under_mpi());
}

TEST_F(LauncherEnv, AnotherLaunchersVariablesAreRead) {
    setenv("PMI_SIZE", "4", 1);
    setenv("PMI_RANK", "3", 1);
    EXPECT_EQ(sixnd::launched_world_size(), 4);
    EXPECT_EQ(sixnd::launched_world_rank(), 3);
    EXPECT_TRUE(sixnd::launched_under_mpi());
}
