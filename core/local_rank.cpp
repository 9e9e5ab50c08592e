#include "core/local_rank.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace sixnd {

namespace {

// A launcher's variable: an integer from `least` up that fits an int, else an Error naming it.
int launcher_int(const char* var, const char* v, long least, const char* what) {
    char* end = nullptr;
    errno = 0;
    const long r = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || errno != 0 || r < least || r > INT_MAX)
        throw Error(var, "'" + std::string(v) + "' is not " + what);
    return static_cast<int>(r);
}

}  // namespace

LocalRank resolve_local_rank(int world_rank, int node_rank, const std::function<const char*(const char*)>& env) {
    if (node_rank >= 0) return {node_rank, "MPI shared-memory communicator"};
    for (const char* var :
         {"OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
        if (const char* v = env(var)) return {launcher_int(var, v, 0, "a local rank (a non-negative integer)"), var};
    }
    return {world_rank, "world rank"};
}

int local_process_count(const std::function<const char*(const char*)>& env) {
    for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
        if (const char* v = env(var)) return launcher_int(var, v, 1, "a count of processes on this node (an integer >= 1)");
    }
    return 1;
}

int device_for_local_rank(int local_rank, int device_count) {
    if (device_count < 1)
        throw Error("GPU", "no CUDA device is visible to local rank " + std::to_string(local_rank));
    if (local_rank < 0) throw Error("GPU", "local rank " + std::to_string(local_rank) + " is negative");
    return local_rank % device_count;
}

void require_one_rank_per_device(const std::vector<double>& device_keys) {
    for (size_t j = 1; j < device_keys.size(); j++)
        for (size_t i = 0; i < j; i++)
            if (device_keys[i] == device_keys[j])
                throw Error("GPU", "ranks " + std::to_string(i) + " and " + std::to_string(j) +
                                       " were given the same GPU (same host and PCI bus); NCCL runs one rank per GPU: "
                                       "start at most as many ranks per node as it has GPUs (nvidia-smi -L), or give "
                                       "each rank a GPU of its own with CUDA_VISIBLE_DEVICES");
}

}  // namespace sixnd
