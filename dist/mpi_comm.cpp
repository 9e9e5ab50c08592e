// MpiComm: collectives on host buffers through MPI (OpenMPI). BF16 has no MPI type, so it
// travels as 16-bit words with a user-defined sum that adds in FP32 and rounds back.
#include <mpi.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/error.h"
#include "core/local_rank.h"
#include "dist/comm.h"
#include "dist/rank_agreement.h"

namespace sixnd {

namespace {

void check(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw Error(std::string("MPI ") + what, std::string(msg, len));
}

void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
    const uint16_t* a = static_cast<const uint16_t*>(in);
    uint16_t* b = static_cast<uint16_t*>(inout);
    for (int i = 0; i < *len; i++) b[i] = bf16::from_float(bf16::to_float(a[i]) + bf16::to_float(b[i]));
}

// A rank that fails alone (an error only it met, not agreed with the others) must not enter
// MPI_Finalize: that waits for the other ranks, which wait in their next collective for this one,
// and the job would hang without a word. So a rank whose run is unwinding from an error first
// waits this long for every rank to reach its end; when they do not, it leaves MPI unfinalized,
// and abort_after_lone_failure() ends the job once the error is printed.
constexpr double kLoneFailureWaitSeconds = 30;
// How long a failing rank other than 0 waits for the others to reach their end before it prints
// its error (MpiComm::says_failure): ranks that meet one fault alike meet it within this.
constexpr double kSameFailureWaitSeconds = 5;
bool lone_failure = false;

struct MpiRequest final : CommRequest {
    MPI_Request req = MPI_REQUEST_NULL;
    void wait() override { check(MPI_Wait(&req, MPI_STATUS_IGNORE), "wait"); }
    ~MpiRequest() override {
        if (req != MPI_REQUEST_NULL) MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
};

class MpiComm final : public Comm {
public:
    MpiComm() {
        int inited = 0;
        MPI_Initialized(&inited);
        if (!inited) {
            int provided = 0;
            check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "init");
            owns_ = true;
        }
        // Errors come back as codes and become sixnd errors with a message, instead of MPI's abort.
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
        MPI_Comm_size(MPI_COMM_WORLD, &size_);
        MPI_Op_create(&bf16_sum, 1, &bf16_sum_op_);
        check(MPI_Comm_dup(MPI_COMM_WORLD, &exit_comm_), "communicator");
        // The rank among this node's processes: MPI knows it through its shared-memory split.
        int node_rank = -1;
        MPI_Comm node;
        if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
            MPI_Comm_rank(node, &node_rank);
            MPI_Comm_free(&node);
        }
        local_rank_ = resolve_local_rank(rank_, node_rank, [](const char* v) { return std::getenv(v); }).rank;
    }
    ~MpiComm() override {
        const bool failing = std::uncaught_exceptions() > 0;
        if (!reach_end(failing ? kLoneFailureWaitSeconds : -1)) {
            lone_failure = true;
            return;
        }
        gather_outcomes();
        MPI_Comm_free(&exit_comm_);
        MPI_Op_free(&bf16_sum_op_);
        if (owns_) MPI_Finalize();
    }
    bool says_failure(const std::string& message) override {
        outcome_ = text_hash52(message);
        if (rank_ == 0 || !reach_end(kSameFailureWaitSeconds) || !gather_outcomes()) return true;
        return outcomes_[0] != outcome_;
    }
    const char* name() const override { return "mpi"; }
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    int local_rank() const override { return local_rank_; }

    void all_reduce_sum(void* buf, size_t n, DType t) override {
        check(MPI_Allreduce(MPI_IN_PLACE, buf, count_of(n), type(t), op(t), MPI_COMM_WORLD), "all-reduce");
        count(Collective::all_reduce, 2.0 * (size_ - 1) / size_ * n * dtype_size(t));
    }
    void reduce_scatter_sum(void* out, const void* in, size_t n, DType t) override {
        check(MPI_Reduce_scatter_block(in, out, count_of(n), type(t), op(t), MPI_COMM_WORLD), "reduce-scatter");
        count(Collective::reduce_scatter, static_cast<double>(size_ - 1) * n * dtype_size(t));
    }
    std::unique_ptr<CommRequest> all_gather_async(void* out, const void* in, size_t n, DType t) override {
        auto r = std::make_unique<MpiRequest>();
        const void* send = in == static_cast<char*>(out) + rank_ * n * dtype_size(t) ? MPI_IN_PLACE : in;
        check(MPI_Iallgather(send, count_of(n), type(t), out, count_of(n), type(t), MPI_COMM_WORLD, &r->req), "all-gather");
        count(Collective::all_gather, static_cast<double>(size_ - 1) * n * dtype_size(t));
        return r;
    }
    void broadcast(void* buf, size_t bytes, int root) override {
        check(MPI_Bcast(buf, count_of(bytes), MPI_BYTE, root, MPI_COMM_WORLD), "broadcast");
        count(Collective::broadcast, rank_ == root ? static_cast<double>(bytes) * (size_ - 1) : 0.0);
    }
    void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "barrier"); }
    double all_reduce_sum_host(double v) override {
        check(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "all-reduce");
        return v;
    }
    std::vector<double> all_gather_host(const std::vector<double>& mine) override {
        std::vector<double> all(mine.size() * size_);
        check(MPI_Allgather(mine.data(), count_of(mine.size()), MPI_DOUBLE, all.data(), count_of(mine.size()), MPI_DOUBLE,
                            MPI_COMM_WORLD),
              "all-gather");
        return all;
    }

private:
    static int count_of(size_t n) {
        if (n > static_cast<size_t>(INT32_MAX)) throw Error("MPI", "a collective of more than 2^31 elements; use smaller units");
        return static_cast<int>(n);
    }
    static MPI_Datatype type(DType t) { return t == DType::f32 ? MPI_FLOAT : MPI_UINT16_T; }
    MPI_Op op(DType t) const { return t == DType::f32 ? MPI_SUM : bf16_sum_op_; }

    // The end of a run, on exit_comm_ (which no collective of the run can match), met by every
    // rank in two steps: a barrier, then a gather of each rank's outcome (-1: it succeeded; else
    // its error's hash). A failing rank may meet it early, in says_failure, and the destructor
    // then goes on from there, so every rank takes each step once.
    // Whether every rank reached the barrier within `seconds` of this rank's arrival (at all
    // when negative).
    bool reach_end(double seconds) {
        if (ended_) return true;
        if (end_req_ == MPI_REQUEST_NULL) {
            if (MPI_Ibarrier(exit_comm_, &end_req_) != MPI_SUCCESS) return false;
            arrived_at_ = MPI_Wtime();
        }
        int done = 0;
        while (MPI_Test(&end_req_, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done) {
            if (seconds >= 0 && MPI_Wtime() > arrived_at_ + seconds) return false;
            usleep(1000);
        }
        ended_ = done != 0;
        return ended_;
    }
    bool gather_outcomes() {
        if (outcomes_.empty()) {
            outcomes_.resize(size_);
            gathered_ = MPI_Allgather(&outcome_, 1, MPI_DOUBLE, outcomes_.data(), 1, MPI_DOUBLE, exit_comm_) == MPI_SUCCESS;
        }
        return gathered_;
    }

    int rank_ = 0, size_ = 1, local_rank_ = 0;
    bool owns_ = false;
    MPI_Op bf16_sum_op_{};
    MPI_Comm exit_comm_ = MPI_COMM_NULL;  // for the end of the run alone
    MPI_Request end_req_ = MPI_REQUEST_NULL;
    double arrived_at_ = 0;
    bool ended_ = false, gathered_ = false;
    double outcome_ = -1;
    std::vector<double> outcomes_;
};

}  // namespace

std::unique_ptr<Comm> make_mpi_comm() { return std::make_unique<MpiComm>(); }

void abort_after_lone_failure() {
    if (!lone_failure) return;
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "sixnd: rank %d failed alone (the error above); the other ranks did not stop within %.0f s, "
                 "so the job is aborted\n", rank, kLoneFailureWaitSeconds);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

}  // namespace sixnd
