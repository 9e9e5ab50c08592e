#include "data/loader.h"

#include "core/error.h"
#include "core/rng.h"

namespace sixnd {

DataLoader::DataLoader(const std::string& glob, int B, int T, int rank, int world, int accum, bool shuffle, uint64_t seed)
    : tokens_(glob, rank == 0), B_(B), T_(T), rank_(rank), world_(world), accum_(accum), shuffle_(shuffle), seed_(seed),
      row_(static_cast<size_t>(T) + 1) {
    if (B <= 0) throw Error("--batch", "must be positive, got " + std::to_string(B));
    if (T <= 0) throw Error("--seq-len", "must be positive, got " + std::to_string(T));
    samples_ = tokens_.size() > 0 ? (tokens_.size() - 1) / static_cast<uint64_t>(T) : 0;
    const uint64_t need = static_cast<uint64_t>(world) * B * accum;
    if (samples_ < need)
        throw Error(glob, "holds " + std::to_string(tokens_.size()) + " tokens, fewer than one " +
                              (accum > 1 ? "step of " + std::to_string(accum) + " x " : std::string("global batch of ")) +
                              std::to_string(world) + " x " + std::to_string(B) + " x " + std::to_string(T) + " (+1) needs");
    build_order();
}

void DataLoader::maybe_end_epoch() {
    const uint64_t global = static_cast<uint64_t>(world_) * B_, step = global * accum_;
    const bool step_start = state_.cursor % step == 0;
    if ((step_start && state_.cursor + step > samples_) || state_.cursor + global > samples_) {
        state_.epoch++;
        state_.cursor = 0;
    }
}

void DataLoader::build_order() {
    order_.clear();
    if (!shuffle_) return;
    order_.resize(samples_);
    for (uint64_t i = 0; i < samples_; i++) order_[i] = i;
    Rng rng(seed_ ^ (0x5851f42d4c957f2dull * (state_.epoch + 1)));
    shuffle(order_, rng);
}

void DataLoader::next(int32_t* inputs, int32_t* targets) {
    const uint64_t global = static_cast<uint64_t>(world_) * B_;
    const uint64_t epoch = state_.epoch;
    maybe_end_epoch();
    if (state_.epoch != epoch) build_order();
    last_.assign(static_cast<size_t>(B_), 0);
    for (int b = 0; b < B_; b++) {
        uint64_t k = state_.cursor + static_cast<uint64_t>(rank_) * B_ + b;
        uint64_t sample = shuffle_ ? order_[k] : k;
        last_[static_cast<size_t>(b)] = sample;
        tokens_.read(sample * T_, static_cast<size_t>(T_) + 1, row_.data());
        std::copy(row_.begin(), row_.end() - 1, inputs + static_cast<size_t>(b) * T_);
        std::copy(row_.begin() + 1, row_.end(), targets + static_cast<size_t>(b) * T_);
    }
    state_.cursor += global;
}

void DataLoader::advance(uint64_t n) {
    const uint64_t global = static_cast<uint64_t>(world_) * B_;
    const uint64_t epoch = state_.epoch;
    for (uint64_t i = 0; i < n; i++) {
        maybe_end_epoch();
        state_.cursor += global;
    }
    if (state_.epoch != epoch) build_order();
}

RowSource DataLoader::source_of(uint64_t sample) const {
    uint64_t at = sample * static_cast<uint64_t>(T_);
    for (const Shard& s : tokens_.shards()) {
        if (at < s.size()) return RowSource{s.path(), at};
        at -= s.size();
    }
    throw Error("data loader", "sample " + std::to_string(sample) + " lies beyond the data set");
}

void DataLoader::set_state(const LoaderState& s) {
    if (s.cursor > samples_) throw Error("data loader state", "position beyond the data set (was the data changed?)");
    bool new_epoch = s.epoch != state_.epoch;
    state_ = s;
    if (new_epoch) build_order();
}

}  // namespace sixnd
