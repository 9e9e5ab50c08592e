#include "dist/comm.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <initializer_list>

#include "core/error.h"

namespace sixnd {

const char* collective_name(Collective c) {
    static const char* names[] = {"all_reduce", "reduce_scatter", "all_gather", "broadcast"};
    return names[static_cast<int>(c)];
}

size_t Comm::bytes_sent_total() const {
    size_t t = 0;
    for (size_t b : sent_) t += b;
    return t;
}

namespace {
struct DoneRequest final : CommRequest {
    void wait() override {}
};
}  // namespace

void LocalComm::reduce_scatter_sum(void* out, const void* in, size_t n, DType t) {
    if (out != in) mem_.copy(out, in, n * dtype_size(t));
}

std::unique_ptr<CommRequest> LocalComm::all_gather_async(void* out, const void* in, size_t n, DType t) {
    if (out != in) mem_.copy(out, in, n * dtype_size(t));
    return std::make_unique<DoneRequest>();
}

namespace {

// The first of a launcher's variables that is set: each launcher sets its own, and one left in
// the environment by another (a PMI_RANK of an outer job) must not overrule it.
int launcher_value(std::initializer_list<const char*> vars, int none) {
    for (const char* var : vars)
        if (const char* v = std::getenv(var)) return std::atoi(v);
    return none;
}

}  // namespace

int launched_world_size() {
    return std::max(1, launcher_value({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"}, 1));
}

bool launched_under_mpi() { return launched_world_size() > 1; }

int launched_world_rank() { return std::max(0, launcher_value({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}, 0)); }

void wait_for_rank_zero_to_report() {
    // Far more than rank 0 takes to meet the same fault, even with ranks oversubscribing cores.
    constexpr unsigned kSeconds = 5;
    if (launched_under_mpi() && launched_world_rank() != 0) sleep(kSeconds);
}

#ifndef SIXND_HAVE_MPI
std::unique_ptr<Comm> make_mpi_comm() {
    throw Error("mpirun", "this sixnd was built without MPI; rebuild with OpenMPI installed (libopenmpi-dev)");
}
void abort_after_lone_failure() {}
#endif
#ifndef SIXND_HAVE_NCCL_COMM
std::unique_ptr<Comm> make_nccl_comm() {
    throw Error("mpirun", "this sixnd was built without NCCL and CUDA; multi-GPU runs need both");
}
#endif

}  // namespace sixnd
