// Collectives on typed buffers. LocalComm is one process; MpiComm works on host memory (the
// CPU backend under mpirun); NcclComm on device memory (one GPU per local rank; the NCCL id is
// broadcast over MPI, or made locally for one rank). On device memory a collective's input and
// result are ordered with the compute stream, not the host: work queued before the call is done
// writing the input, and work queued after a synchronous collective (or a request's wait())
// sees the result. Every communicator counts the bytes this rank sent, by collective, as
// the ring algorithm sends them: all-reduce 2(n-1)/n of the buffer, reduce-scatter and
// all-gather (n-1)/n of the full buffer.
#pragma once
#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/memory.h"

namespace sixnd {

enum class Collective { all_reduce, reduce_scatter, all_gather, broadcast, count };
const char* collective_name(Collective c);

// A collective in flight; wait() blocks until its result is in place.
class CommRequest {
public:
    virtual ~CommRequest() = default;
    virtual void wait() = 0;
};

class Comm {
public:
    virtual ~Comm() = default;
    virtual const char* name() const = 0;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    virtual int local_rank() const { return rank(); }

    // buf[n] = sum over ranks of buf[n]  (bf16 is summed in FP32 and rounded once per hop)
    virtual void all_reduce_sum(void* buf, size_t n, DType t) = 0;
    // in[size()*n] -> out[n] = sum over ranks of in[rank()*n .. +n]
    virtual void reduce_scatter_sum(void* out, const void* in, size_t n, DType t) = 0;
    // out[size()*n]: rank r's n elements land at out[r*n]. In place when in == out + rank()*n.
    virtual std::unique_ptr<CommRequest> all_gather_async(void* out, const void* in, size_t n, DType t) = 0;
    void all_gather(void* out, const void* in, size_t n, DType t) { all_gather_async(out, in, n, t)->wait(); }
    virtual void broadcast(void* buf, size_t bytes, int root) = 0;
    virtual void barrier() = 0;

    // On a rank whose run failed with `message`, not agreed with the others, before it prints it:
    // false where the job will say the same without this rank (every rank reached the end of its
    // run within a few seconds and rank 0 failed with the same message), so that a fault every
    // rank meets alike (a missing data file) is said once. Not a collective: a rank that
    // succeeded meets the failing ones at the end of its run.
    virtual bool says_failure(const std::string&) { return true; }

    // Host-side helpers for scalars and small records (loss, norms, per-rank memory).
    virtual double all_reduce_sum_host(double v) = 0;
    virtual std::vector<double> all_gather_host(const std::vector<double>& mine) = 0;

    size_t bytes_sent(Collective c) const { return sent_[static_cast<int>(c)]; }
    size_t bytes_sent_total() const;

protected:
    void count(Collective c, double bytes) { sent_[static_cast<int>(c)] += static_cast<size_t>(bytes); }

private:
    std::array<size_t, static_cast<int>(Collective::count)> sent_{};
};

// One process: collectives are copies (through the backend, so device memory works too).
class LocalComm final : public Comm {
public:
    explicit LocalComm(MemoryBackend& mem) : mem_(mem) {}
    const char* name() const override { return "local"; }
    int rank() const override { return 0; }
    int size() const override { return 1; }
    void all_reduce_sum(void*, size_t, DType) override {}
    void reduce_scatter_sum(void* out, const void* in, size_t n, DType t) override;
    std::unique_ptr<CommRequest> all_gather_async(void* out, const void* in, size_t n, DType t) override;
    void broadcast(void*, size_t, int) override {}
    void barrier() override {}
    double all_reduce_sum_host(double v) override { return v; }
    std::vector<double> all_gather_host(const std::vector<double>& mine) override { return mine; }

private:
    MemoryBackend& mem_;
};

// The number of ranks an MPI launcher started (from its environment; 1 without one).
int launched_world_size();
// True when this process was started by an MPI launcher with more than one rank.
bool launched_under_mpi();
// This process's rank among them (from the launcher's environment; 0 without one).
int launched_world_rank();
// Called before printing an error met before the ranks connected (a flag, an input they share):
// every rank meets such a fault alike, so rank 0 alone prints it at once and exits, and mpirun
// then stops the others. Any other rank first waits a few seconds for that; if it is still
// running after them, the fault was its own, and it prints it.
void wait_for_rank_zero_to_report();
// MPI on host memory; throws Error when sixnd was built without MPI.
std::unique_ptr<Comm> make_mpi_comm();
// NCCL on device memory, bootstrapped over MPI under a launcher of several ranks, else one rank
// without MPI; throws Error when built without NCCL.
std::unique_ptr<Comm> make_nccl_comm();
// After the error is printed: when this rank failed alone and the others never reached the end
// of the run (they wait in a collective for it), ends the whole job (MPI_Abort); else nothing.
void abort_after_lone_failure();

}  // namespace sixnd
