// NcclComm: collectives on device buffers through NCCL, one GPU per local rank (modulo the
// visible devices: core/local_rank.h, the same rule make_backend follows). Under an MPI launcher
// with more than one rank it is bootstrapped over MPI (rank 0 makes the NCCL id and broadcasts
// it); in a single process (no launcher, or mpirun -np 1) it is a one-rank communicator made
// without MPI, which is what a machine with one GPU can check (NCCL refuses two ranks on one
// GPU) and what a build without MPI can run.
//
// Ordering is kept on the device, not by the host. The compute (every kernel, cuBLASLt call and
// CudaMemory copy or memset) runs on the legacy default stream (model/cuda/cuda_ops.cu,
// cuda_device.cpp); collectives run on a non-blocking stream of their own. Non-blocking, because
// the legacy stream waits for all work of the blocking streams, so a compute kernel queued
// after a ZeRO-3 prefetch would wait for it and nothing would overlap. That stream is then not
// ordered with the compute at all, so each collective first makes it wait for an event recorded
// on the legacy stream (the compute queued so far, which wrote the input, and which may still
// read the output: a ZeRO-3 slot refilled while the previous unit's kernels read it), and the
// legacy stream waits for the collective's end before any compute queued once the result is
// handed over (a synchronous collective's return, CommRequest::wait). The legacy stream, not
// stream 0: stream 0 means the per-thread stream in a file built with --default-stream
// per-thread; nothing in sixnd is, and if that changed, the event must go on the ops' stream.
//
// The host waits for a collective only where its result is handed over, and then for that
// collective alone (which follows the compute queued before it, and the collectives before it
// on this stream), never for the device. all_gather_async returns with the gather queued, so
// ZeRO-3's prefetch runs during the current unit's compute. Every such wait polls NCCL's
// asynchronous error: a fault NCCL reports only there (a network error, a peer's communicator
// aborted) would leave a blocking CUDA wait waiting forever, with nothing printed.
#include <cuda_runtime.h>
#include <nccl.h>

#include <unistd.h>

#include <exception>
#include <functional>
#include <string>
#include <thread>

#include "core/error.h"
#include "core/local_rank.h"
#include "dist/comm.h"

namespace sixnd {

namespace {

void cuda_check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw Error(std::string("CUDA ") + what, cudaGetErrorString(e));
}
void nccl_check(ncclResult_t r, const char* what) {
    if (r != ncclSuccess) throw Error(std::string("NCCL ") + what, ncclGetErrorString(r));
}

// The host and PCI bus of a device, hashed to 52 bits so that a double carries it exactly.
double device_key(int device) {
    char bus[64] = {};
    cuda_check(cudaDeviceGetPCIBusId(bus, sizeof bus, device), "PCI bus id");
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return static_cast<double>(std::hash<std::string>{}(std::string(host) + "/" + bus) >> 12);
}

ncclDataType_t nccl_type(DType t) { return t == DType::f32 ? ncclFloat : ncclBfloat16; }

// Where the compute runs (see the top of this file).
const cudaStream_t kComputeStream = cudaStreamLegacy;

// Until query() (a CUDA stream or event query) says the work is done, or NCCL reports an
// asynchronous error on comm, which becomes an Error naming `what` and NCCL's last message.
template <typename Query>
void wait_watching(ncclComm_t comm, Query query, const char* what) {
    for (;;) {
        const cudaError_t e = query();
        if (e == cudaSuccess) return;
        if (e != cudaErrorNotReady) cuda_check(e, what);
        ncclResult_t async = ncclSuccess;
        nccl_check(ncclCommGetAsyncError(comm, &async), what);
        if (async != ncclSuccess && async != ncclInProgress)
            throw Error(std::string("NCCL ") + what, std::string(ncclGetErrorString(async)) + ": " + ncclGetLastError(comm));
        // Spin as CUDA's own waits do by default: a sleep would add the timer's slack (~50 us)
        // to every collective.
        std::this_thread::yield();
    }
}

// The end of a collective queued on `stream`: the host waits for it (watching NCCL's errors),
// then the compute stream is ordered after it, so every kernel queued from here on sees the result.
void hand_over(ncclComm_t comm, cudaEvent_t done, const char* what) {
    wait_watching(comm, [done] { return cudaEventQuery(done); }, what);
    cuda_check(cudaStreamWaitEvent(kComputeStream, done, 0), what);
}

struct NcclRequest final : CommRequest {
    ncclComm_t comm;
    cudaEvent_t done{};
    bool handed_over = false;
    NcclRequest(ncclComm_t c, cudaStream_t s) : comm(c) {
        cuda_check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "event");
        cuda_check(cudaEventRecord(done, s), "event record");
    }
    // A request dropped unwaited still orders the compute after the gather and outlives it (its
    // buffers may be freed next). Unwinding from an error, the gather may never finish (the
    // communicator is aborted next): the event is released without waiting for it.
    ~NcclRequest() override {
        if (!handed_over && std::uncaught_exceptions() == 0) {
            cudaStreamWaitEvent(kComputeStream, done, 0);
            cudaEventSynchronize(done);
        }
        cudaEventDestroy(done);
    }
    void wait() override {
        if (handed_over) return;
        hand_over(comm, done, "all-gather");
        handed_over = true;
    }
};

class NcclComm final : public Comm {
public:
    NcclComm() {
        if (launched_under_mpi()) mpi_ = make_mpi_comm();
        int devices = 0;
        cuda_check(cudaGetDeviceCount(&devices), "device count");
        const int device = device_for_local_rank(local_rank(), devices);
        cuda_check(cudaSetDevice(device), "set device");
        ncclUniqueId id{};
        if (mpi_) {
            require_one_rank_per_device(mpi_->all_gather_host({device_key(device)}));
            if (mpi_->rank() == 0) nccl_check(ncclGetUniqueId(&id), "unique id");
            mpi_->broadcast(&id, sizeof id, 0);
        } else {
            nccl_check(ncclGetUniqueId(&id), "unique id");
        }
        nccl_check(ncclCommInitRank(&comm_, size(), id, rank()), "init");
        cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream");
        cuda_check(cudaEventCreateWithFlags(&compute_mark_, cudaEventDisableTiming), "event");
        cuda_check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "event");
    }
    // A run unwinding from an error may have collectives in flight that the other ranks will
    // never join: waiting on the stream or destroying the communicator would wait with them.
    ~NcclComm() override {
        if (std::uncaught_exceptions() > 0) {
            ncclCommAbort(comm_);
        } else {
            cudaStreamSynchronize(stream_);
            ncclCommDestroy(comm_);
        }
        cudaEventDestroy(done_);
        cudaEventDestroy(compute_mark_);
        cudaStreamDestroy(stream_);
    }
    bool says_failure(const std::string& message) override { return mpi_ ? mpi_->says_failure(message) : true; }
    const char* name() const override { return "nccl"; }
    int rank() const override { return mpi_ ? mpi_->rank() : 0; }
    int size() const override { return mpi_ ? mpi_->size() : 1; }
    int local_rank() const override { return mpi_ ? mpi_->local_rank() : 0; }

    void all_reduce_sum(void* buf, size_t n, DType t) override {
        ready();
        nccl_check(ncclAllReduce(buf, buf, n, nccl_type(t), ncclSum, comm_, stream_), "all-reduce");
        finish("all-reduce");
        count(Collective::all_reduce, 2.0 * (size() - 1) / size() * n * dtype_size(t));
    }
    void reduce_scatter_sum(void* out, const void* in, size_t n, DType t) override {
        ready();
        nccl_check(ncclReduceScatter(in, out, n, nccl_type(t), ncclSum, comm_, stream_), "reduce-scatter");
        finish("reduce-scatter");
        count(Collective::reduce_scatter, static_cast<double>(size() - 1) * n * dtype_size(t));
    }
    std::unique_ptr<CommRequest> all_gather_async(void* out, const void* in, size_t n, DType t) override {
        ready();
        nccl_check(ncclAllGather(in, out, n, nccl_type(t), comm_, stream_), "all-gather");
        count(Collective::all_gather, static_cast<double>(size() - 1) * n * dtype_size(t));
        return std::make_unique<NcclRequest>(comm_, stream_);
    }
    void broadcast(void* buf, size_t bytes, int root) override {
        ready();
        nccl_check(ncclBroadcast(buf, buf, bytes, ncclUint8, root, comm_, stream_), "broadcast");
        finish("broadcast");
        count(Collective::broadcast, rank() == root ? static_cast<double>(bytes) * (size() - 1) : 0.0);
    }
    void barrier() override {
        if (mpi_) mpi_->barrier();
    }
    double all_reduce_sum_host(double v) override { return mpi_ ? mpi_->all_reduce_sum_host(v) : v; }
    std::vector<double> all_gather_host(const std::vector<double>& mine) override {
        return mpi_ ? mpi_->all_gather_host(mine) : mine;
    }

private:
    // The next collective on stream_ starts after the compute queued so far (on the device; the
    // host goes on).
    void ready() {
        cuda_check(cudaEventRecord(compute_mark_, kComputeStream), "event record before a collective");
        cuda_check(cudaStreamWaitEvent(stream_, compute_mark_, 0), "stream wait before a collective");
    }
    // A synchronous collective's result is in place for the compute stream on return.
    void finish(const char* what) {
        cuda_check(cudaEventRecord(done_, stream_), what);
        hand_over(comm_, done_, what);
    }

    std::unique_ptr<Comm> mpi_;  // null: one rank, no MPI
    ncclComm_t comm_{};
    cudaStream_t stream_{};
    cudaEvent_t compute_mark_{}, done_{};
};

}  // namespace

std::unique_ptr<Comm> make_nccl_comm() { return std::make_unique<NcclComm>(); }

}  // namespace sixnd
