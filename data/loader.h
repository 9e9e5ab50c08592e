// The training data loader. The token stream (shards concatenated in path order) is cut into
// samples of T+1 tokens that overlap by one: sample i is tokens [i*T, i*T + T + 1), inputs its
// first T, targets its last T. A global micro-batch is world*B consecutive samples of the
// epoch's order; rank r takes the r-th block of B, and a step is `accum` micro-batches in a row.
// So ranks see disjoint slices, and a run with the same samples per step (world*B*accum) sees
// the same tokens whatever the world size and however the step is split into micro-batches.
//
// shuffle off: the order is 0, 1, 2, ...; one process's batch k is then exactly tokens
//   [k*B*T, k*B*T + B*T + 1), as in `sixnd eval`.
// shuffle on: each epoch's order is a permutation drawn from (seed, epoch), so it is the same
//   on every rank and after a resume.
// An epoch ends, at a step's start, when fewer than a step's world*B*accum samples remain; the
// remainder is dropped. So no step holds samples of two epochs (with shuffle, possibly one
// sample twice), and where epochs end does not depend on the split. (A position restored from a
// run with another step size may sit inside a step: that epoch then ends at the first
// micro-batch that would not fit.)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/token_set.h"

namespace sixnd {

// Where a sample's tokens are: `shard`'s tokens [offset, offset + T + 1) (the first shard it
// touches; a sample that runs past that shard's end continues at the next shard's start).
struct RowSource {
    std::string shard;
    uint64_t offset = 0;
};

struct LoaderState {
    uint64_t epoch = 0;
    uint64_t cursor = 0;  // samples of this epoch's order already consumed (all ranks)
};

class DataLoader {
public:
    // accum: micro-batches per step.
    DataLoader(const std::string& glob, int B, int T, int rank, int world, int accum, bool shuffle, uint64_t seed);

    // Fills inputs[B*T] and targets[B*T] with this rank's part of the next global micro-batch.
    void next(int32_t* inputs, int32_t* targets);
    // The samples (indices into the token stream, in units of T) of the rows the last next() filled.
    const std::vector<uint64_t>& last_samples() const { return last_; }
    RowSource source_of(uint64_t sample) const;
    const LoaderState& state() const { return state_; }
    void set_state(const LoaderState& s);
    // Moves past n global micro-batches without reading them, as n calls of next() would.
    void advance(uint64_t n);
    const TokenSet& tokens() const { return tokens_; }
    uint64_t samples_per_epoch() const { return samples_; }

private:
    void build_order();
    // Starts the next epoch where the next micro-batch must not come from this one.
    void maybe_end_epoch();

    TokenSet tokens_;
    int B_, T_, rank_, world_, accum_;
    bool shuffle_;
    uint64_t seed_;
    uint64_t samples_ = 0;
    LoaderState state_;
    std::vector<uint64_t> order_;  // empty when shuffle is off
    std::vector<int32_t> row_;
    std::vector<uint64_t> last_;
};

}  // namespace sixnd
