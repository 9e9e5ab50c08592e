// The local-rank -> GPU rule (core/local_rank.h): where the local rank comes from, in which order,
// and the device index modulo the visible devices.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/error.h"
#include "core/local_rank.h"

using namespace sixnd;

namespace {

struct Env {
    std::map<std::string, std::string> vars;
    std::function<const char*(const char*)> fn() const {
        return [this](const char* name) -> const char* {
            auto it = vars.find(name);
            return it == vars.end() ? nullptr : it->second.c_str();
        };
    }
};

TEST(LocalRank, MpiNodeCommunicatorComesFirst) {
    Env e{{{"OMPI_COMM_WORLD_LOCAL_RANK", "5"}, {"SLURM_LOCALID", "6"}}};
    LocalRank r = resolve_local_rank(13, 2, e.fn());
    EXPECT_EQ(r.rank, 2);
    EXPECT_STREQ(r.source, "MPI shared-memory communicator");
}

TEST(LocalRank, LauncherVariablesInOrder) {
    Env e{{{"SLURM_LOCALID", "3"}}};
    EXPECT_EQ(resolve_local_rank(11, -1, e.fn()).rank, 3);
    EXPECT_STREQ(resolve_local_rank(11, -1, e.fn()).source, "SLURM_LOCALID");
    e.vars["MPI_LOCALRANKID"] = "2";
    EXPECT_EQ(resolve_local_rank(11, -1, e.fn()).rank, 2);
    e.vars["MV2_COMM_WORLD_LOCAL_RANK"] = "1";
    EXPECT_EQ(resolve_local_rank(11, -1, e.fn()).rank, 1);
    e.vars["OMPI_COMM_WORLD_LOCAL_RANK"] = "0";
    LocalRank r = resolve_local_rank(11, -1, e.fn());
    EXPECT_EQ(r.rank, 0);
    EXPECT_STREQ(r.source, "OMPI_COMM_WORLD_LOCAL_RANK");
}

TEST(LocalRank, WorldRankWhenNothingElseKnows) {
    LocalRank r = resolve_local_rank(9, -1, Env{}.fn());
    EXPECT_EQ(r.rank, 9);
    EXPECT_STREQ(r.source, "world rank");
}

TEST(LocalRank, MalformedLauncherVariableIsNamed) {
    for (const char* bad : {"", "x", "-1", "2a", "99999999999"}) {
        Env e{{{"SLURM_LOCALID", bad}}};
        try {
            resolve_local_rank(0, -1, e.fn());
            ADD_FAILURE() << "'" << bad << "' was accepted";
        } catch (const Error& err) {
            EXPECT_EQ(err.where(), "SLURM_LOCALID") << bad;
        }
    }
}

TEST(LocalRank, ProcessCountFromTheLauncher) {
    EXPECT_EQ(local_process_count(Env{}.fn()), 1);
    EXPECT_EQ(local_process_count(Env{{{"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}}}.fn()), 4);
    EXPECT_EQ(local_process_count(Env{{{"MV2_COMM_WORLD_LOCAL_SIZE", "3"}}}.fn()), 3);
    EXPECT_EQ(local_process_count(Env{{{"MPI_LOCALNRANKS", "2"}}}.fn()), 2);
    EXPECT_EQ(local_process_count(Env{{{"OMPI_COMM_WORLD_LOCAL_SIZE", "8"}, {"MPI_LOCALNRANKS", "2"}}}.fn()), 8);
}

TEST(LocalRank, MalformedProcessCountIsNamed) {
    for (const char* bad : {"", "x", "0", "-2", "4 ", "99999999999"}) {
        Env e{{{"MPI_LOCALNRANKS", bad}}};
        try {
            local_process_count(e.fn());
            ADD_FAILURE() << "'" << bad << "' was accepted";
        } catch (const Error& err) {
            EXPECT_EQ(err.where(), "MPI_LOCALNRANKS") << bad;
        }
    }
}

TEST(LocalRank, DeviceIsLocalRankModuloVisibleDevices) {
    EXPECT_EQ(device_for_local_rank(0, 8), 0);
    EXPECT_EQ(device_for_local_rank(7, 8), 7);
    EXPECT_EQ(device_for_local_rank(9, 8), 1);   // the world-rank fallback on a second node
    EXPECT_EQ(device_for_local_rank(3, 1), 0);   // one visible GPU per rank
    EXPECT_EQ(device_for_local_rank(5, 4), 1);   // more ranks than GPUs
    EXPECT_THROW(device_for_local_rank(0, 0), Error);
    EXPECT_THROW(device_for_local_rank(-1, 4), Error);
}

}  // namespace

TEST(LocalRank, RanksSharingAGpuAreNamed) {
    EXPECT_NO_THROW(require_one_rank_per_device({}));
    EXPECT_NO_THROW(require_one_rank_per_device({7}));
    EXPECT_NO_THROW(require_one_rank_per_device({1, 2, 3, 4}));
    try {
        require_one_rank_per_device({1, 2, 3, 2, 1});
        FAIL() << "ranks sharing a GPU were not refused";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("ranks 1 and 3"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("one rank per GPU"), std::string::npos) << e.what();
    }
}
