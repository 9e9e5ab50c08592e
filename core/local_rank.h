// Which GPU a process takes: its rank among the processes on its node (the local rank), modulo
// the devices it can see. Pure functions, so the rule is tested without MPI or a GPU.
//
// The local rank comes, most trustworthy first, from MPI's per-node communicator (the rank in
// MPI_Comm_split_type(..., MPI_COMM_TYPE_SHARED, ...), when the caller has one), then from the
// launcher's variables: OMPI_COMM_WORLD_LOCAL_RANK (Open MPI), MV2_COMM_WORLD_LOCAL_RANK
// (MVAPICH2), MPI_LOCALRANKID (MPICH and Intel MPI) and SLURM_LOCALID (srun); failing all of
// those, the world rank, which is right when ranks are placed on nodes in blocks.
//
// The modulo covers a launcher that gives each rank one visible GPU (srun --gpus-per-task=1, or
// CUDA_VISIBLE_DEVICES set per rank: every rank sees device 0). More ranks on a node than it
// has GPUs would share one, which NCCL refuses: require_one_rank_per_device says so first.
#pragma once
#include <cstdlib>
#include <functional>
#include <vector>

namespace sixnd {

struct LocalRank {
    int rank = 0;
    const char* source = "";  // "MPI shared-memory communicator", a variable's name, or "world rank"
};

// node_rank: the rank in MPI's per-node communicator, or -1 when there is none. env: looks up an
// environment variable (nullptr when unset). A launcher variable that is set but is not a
// non-negative integer is an Error naming it.
LocalRank resolve_local_rank(int world_rank, int node_rank, const std::function<const char*(const char*)>& env);

// The job's processes on this node (the processes that share its cores), from the launcher's
// variables: OMPI_COMM_WORLD_LOCAL_SIZE (Open MPI), MV2_COMM_WORLD_LOCAL_SIZE (MVAPICH2),
// MPI_LOCALNRANKS (MPICH and Intel MPI); else 1. One set to anything but an integer >= 1 is an
// Error naming it (read as 1, every rank on a node would take all of its cores).
int local_process_count(const std::function<const char*(const char*)>& env = std::getenv);

// The device index for a local rank: local_rank modulo device_count; an Error when no device is
// visible.
int device_for_local_rank(int local_rank, int device_count);

// device_keys[r]: an id of the GPU rank r was given, equal for the same physical device (a hash
// of the host and the PCI bus, gathered from every rank). An Error naming the first two ranks
// that share a GPU, so that every rank stops with the same message before NCCL starts.
void require_one_rank_per_device(const std::vector<double>& device_keys);

}  // namespace sixnd
