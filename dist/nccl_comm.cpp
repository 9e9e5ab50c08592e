// NcclComm: collectives on device buffers through NCCL, one GPU per local rank (modulo the
// visible devices: core/local_rank.h, the same rule make_backend follows), bootstrapped
// over MPI (rank 0 makes the NCCL id and broadcasts it). Collectives run on a stream of their
// own; the compute work they depend on is finished first (device synchronisation), and
// all_gather_async returns while the gather is still in flight, so ZeRO-3 can prefetch the
// next unit during the current one's compute. Every wait polls NCCL's asynchronous error: a
// fault NCCL reports only there (a network error, a peer's communicator aborted) would leave a
// blocking CUDA wait waiting forever, with nothing printed.
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

struct NcclRequest final : CommRequest {
    ncclComm_t comm;
    cudaEvent_t done{};
    NcclRequest(ncclComm_t c, cudaStream_t s) : comm(c) {
        cuda_check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "event");
        cuda_check(cudaEventRecord(done, s), "event record");
    }
    // Unwinding from an error, the gather may never finish (the communicator is aborted next):
    // the event is released without waiting for it.
    ~NcclRequest() override {
        if (std::uncaught_exceptions() == 0) cudaEventSynchronize(done);
        cudaEventDestroy(done);
    }
    void wait() override {
        wait_watching(comm, [this] { return cudaEventQuery(done); }, "all-gather");
    }
};

class NcclComm final : public Comm {
public:
    NcclComm() : mpi_(make_mpi_comm()) {
        int devices = 0;
        cuda_check(cudaGetDeviceCount(&devices), "device count");
        const int device = device_for_local_rank(mpi_->local_rank(), devices);
        cuda_check(cudaSetDevice(device), "set device");
        require_one_rank_per_device(mpi_->all_gather_host({device_key(device)}));
        ncclUniqueId id{};
        if (mpi_->rank() == 0) nccl_check(ncclGetUniqueId(&id), "unique id");
        mpi_->broadcast(&id, sizeof id, 0);
        nccl_check(ncclCommInitRank(&comm_, mpi_->size(), id, mpi_->rank()), "init");
        cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "stream");
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
        cudaStreamDestroy(stream_);
    }
    const char* name() const override { return "nccl"; }
    int rank() const override { return mpi_->rank(); }
    int size() const override { return mpi_->size(); }
    int local_rank() const override { return mpi_->local_rank(); }

    void all_reduce_sum(void* buf, size_t n, DType t) override {
        ready();
        nccl_check(ncclAllReduce(buf, buf, n, nccl_type(t), ncclSum, comm_, stream_), "all-reduce");
        finish();
        count(Collective::all_reduce, 2.0 * (size() - 1) / size() * n * dtype_size(t));
    }
    void reduce_scatter_sum(void* out, const void* in, size_t n, DType t) override {
        ready();
        nccl_check(ncclReduceScatter(in, out, n, nccl_type(t), ncclSum, comm_, stream_), "reduce-scatter");
        finish();
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
        finish();
        count(Collective::broadcast, rank() == root ? static_cast<double>(bytes) * (size() - 1) : 0.0);
    }
    void barrier() override { mpi_->barrier(); }
    double all_reduce_sum_host(double v) override { return mpi_->all_reduce_sum_host(v); }
    std::vector<double> all_gather_host(const std::vector<double>& mine) override { return mpi_->all_gather_host(mine); }

private:
    // The inputs were written by kernels on other streams: finish them before communicating.
    // The collectives still in flight and the compute (the legacy default stream) are awaited
    // watching NCCL's errors; the device synchronisation after them then has nothing left to
    // wait for but stragglers of other streams.
    void ready() {
        wait_watching(comm_, [this] { return cudaStreamQuery(stream_); }, "collective in flight");
        wait_watching(comm_, [] { return cudaStreamQuery(cudaStreamLegacy); }, "synchronize before a collective");
        cuda_check(cudaDeviceSynchronize(), "synchronize before a collective");
    }
    void finish() {
        wait_watching(comm_, [this] { return cudaStreamQuery(stream_); }, "collective");
    }

    std::unique_ptr<Comm> mpi_;
    ncclComm_t comm_{};
    cudaStream_t stream_{};
};

}  // namespace

std::unique_ptr<Comm> make_nccl_comm() { return std::make_unique<NcclComm>(); }

}  // namespace sixnd
