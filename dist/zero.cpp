#include "dist/zero.h"

#include <xxhash.h>

#include <algorithm>

#include "core/error.h"
#include "core/hex.h"
#include "dist/rank_agreement.h"

namespace sixnd {

ZeroModelBuffers zero_model_buffers(int stage, int world) {
    return ZeroModelBuffers{64 * static_cast<size_t>(world), stage < 3, stage < 2};
}

struct ZeroEngine::Slot {
    DeviceBuffer buf;
    int unit = -1;
    std::unique_ptr<CommRequest> pending;
};

ZeroEngine::ZeroEngine(int stage, Comm& comm, MemoryBackend& mem, DType dtype, std::vector<UnitSpan> units,
                       UnitMemory& model, void* full_params, void* full_grads, AddFn add)
    : stage_(stage), comm_(comm), mem_(mem), dtype_(dtype), es_(dtype_size(dtype)), units_(std::move(units)),
      model_(model), full_params_(full_params), full_grads_(full_grads), add_(std::move(add)) {
    if (stage < 0 || stage > 3) throw Error("--zero", "stage must be 0, 1, 2 or 3");
    const size_t W = comm.size(), r = comm.rank();
    size_t max_slice = 0, max_unit = 0;
    for (size_t u = 0; u < units_.size(); u++) {
        const UnitSpan& s = units_[u];
        if (s.size() % W != 0) throw Error("ZeRO", "unit " + std::to_string(u) + " does not split evenly over the ranks");
        ShardSpan sp;
        sp.unit = static_cast<int>(u);
        if (stage == 0) {
            sp.flat_begin = s.begin;
            sp.count = s.size();
        } else {
            sp.count = s.size() / W;
            sp.flat_begin = s.begin + r * sp.count;
        }
        sp.local = shard_elems_;
        shard_elems_ += sp.count;
        shard_.push_back(sp);
        max_slice = std::max(max_slice, s.size() / W);
        if (u > 0) max_unit = std::max(max_unit, s.size());
    }
    if ((stage <= 2) != (full_params != nullptr)) throw Error("ZeRO", "full parameters must exist exactly at stages 0-2");
    if ((stage <= 1) != (full_grads != nullptr)) throw Error("ZeRO", "full gradients must exist exactly at stages 0-1");
    if (stage >= 1) scratch_ = DeviceBuffer(&mem, max_slice * es_, MemCategory::workspace);
    if (stage >= 2) {
        grad_shard_ = DeviceBuffer(&mem, shard_elems_ * es_, MemCategory::grads);
        bucket0_ = DeviceBuffer(&mem, units_[0].size() * es_, MemCategory::grads);
        bucket_ = DeviceBuffer(&mem, max_unit * es_, MemCategory::grads);
        mem.memset(grad_shard_.get(), 0, grad_shard_.bytes());
    }
    if (stage == 3) {
        param_shard_ = DeviceBuffer(&mem, shard_elems_ * es_, MemCategory::params);
        for (int i = 0; i <= kZero3UnitSlots; i++) {
            auto s = std::make_unique<Slot>();
            s->buf = DeviceBuffer(&mem, (i == 0 ? units_[0].size() : max_unit) * es_, MemCategory::params);
            slots_.push_back(std::move(s));
        }
    }
}

ZeroEngine::~ZeroEngine() = default;

void* ZeroEngine::param_at(const ShardSpan& s) const {
    return stage_ == 3 ? param_shard_.as<char>() + s.local * es_ : static_cast<char*>(full_params_) + s.flat_begin * es_;
}
void* ZeroEngine::grad_at(const ShardSpan& s) const {
    return stage_ >= 2 ? grad_shard_.as<char>() + s.local * es_ : static_cast<char*>(full_grads_) + s.flat_begin * es_;
}

void ZeroEngine::begin_step() {
    if (stage_ >= 2) mem_.memset(grad_shard_.get(), 0, grad_shard_.bytes());
}

void ZeroEngine::after_optimizer() {
    if (stage_ == 1 || stage_ == 2) {
        for (size_t u = 0; u < units_.size(); u++) {
            char* unit = static_cast<char*>(full_params_) + units_[u].begin * es_;
            comm_.all_gather(unit, unit + comm_.rank() * slice(static_cast<int>(u)) * es_, slice(static_cast<int>(u)), dtype_);
        }
    }
    if (stage_ == 3) {
        for (auto& s : slots_) {
            if (s->pending) s->pending->wait();
            s->pending.reset();
            s->unit = -1;
        }
        current_ = -1;
    }
}

void ZeroEngine::load_params(const void* host_full) {
    // Each rank loads its own copy (an --init file or checkpoint its node reads): copies that
    // differ would train on silently as different models at stage 0, mixed slices at stage 3.
    check_ranks_agree(comm_, {{"the parameters loaded (--init's model file or the checkpoint's params.bin)",
                               hex64(XXH3_64bits(host_full, units_.back().end * es_))}});
    if (stage_ < 3) {
        mem_.copy_to_device(full_params_, host_full, units_.back().end * es_);
        return;
    }
    for (const ShardSpan& s : shard_)
        mem_.copy_to_device(param_shard_.as<char>() + s.local * es_, static_cast<const char*>(host_full) + s.flat_begin * es_,
                            s.count * es_);
    after_optimizer();
}

std::vector<char> ZeroEngine::gather_params() {
    std::vector<char> host(units_.back().end * es_);
    if (stage_ < 3) {
        mem_.copy_to_host(host.data(), full_params_, host.size());
        return host;
    }
    after_optimizer();  // no gather may be in flight into the slots used below
    for (const ShardSpan& s : shard_) {
        const size_t n = units_[s.unit].size();
        DeviceBuffer& dst = slots_[s.unit == 0 ? 0 : 1]->buf;
        comm_.all_gather(dst.get(), param_shard_.as<char>() + s.local * es_, s.count, dtype_);
        mem_.copy_to_host(host.data() + units_[s.unit].begin * es_, dst.get(), n * es_);
    }
    after_optimizer();
    return host;
}

// The unit that runs after `unit` in a forward (0, 1..L, L+1, 0) or backward (0, L+1, L..1)
// pass; -1 at the end. The embeddings unit appears twice in forward: first it leads to block 1,
// then (as the LM head) to the first unit of backward.
int ZeroEngine::next_unit(int unit, bool forward) const {
    const int last = static_cast<int>(units_.size()) - 1;
    if (forward) {
        if (unit == 0) return head_seen_ ? last : 1;
        return unit == last ? 0 : unit + 1;
    }
    if (unit == 0) return last;
    return unit == 1 ? -1 : unit - 1;
}

void ZeroEngine::ensure_gathered(int unit) {
    if (unit == 0) {
        Slot& s = *slots_[0];
        if (s.unit != 0) {
            s.pending = comm_.all_gather_async(s.buf.get(), param_shard_.as<char>() + shard_[0].local * es_, shard_[0].count, dtype_);
            s.unit = 0;
        }
        if (s.pending) s.pending->wait();
        s.pending.reset();
        model_.map_unit(0, s.buf.get(), nullptr);
        return;
    }
    prefetch(unit);
    for (int i = 1; i <= kZero3UnitSlots; i++) {
        Slot& s = *slots_[i];
        if (s.unit != unit) continue;
        if (s.pending) s.pending->wait();
        s.pending.reset();
        model_.map_unit(unit, s.buf.get(), nullptr);
        current_ = unit;
        return;
    }
}

void ZeroEngine::prefetch(int unit) {
    if (unit <= 0) return;
    for (int i = 1; i <= kZero3UnitSlots; i++)
        if (slots_[i]->unit == unit) return;
    // Reuse the slot that does not hold the unit in use; its previous unit is thereby released.
    static_assert(kZero3UnitSlots == 2, "with more slots, pick the one released longest ago");
    Slot& s = *slots_[slots_[1]->unit == current_ && current_ != -1 ? 2 : 1];
    if (s.pending) s.pending->wait();
    const ShardSpan& sp = shard_[unit];
    s.pending = comm_.all_gather_async(s.buf.get(), param_shard_.as<char>() + sp.local * es_, sp.count, dtype_);
    s.unit = unit;
}

void ZeroEngine::before_forward(int unit) {
    if (stage_ != 3) return;
    ensure_gathered(unit);
    const int next = next_unit(unit, true);
    // Every forward pass opens unit 0 exactly twice (embedding, then LM head).
    if (unit == 0) head_seen_ = !head_seen_;
    prefetch(next);
}

void ZeroEngine::before_backward(int unit) {
    if (stage_ == 3) {
        ensure_gathered(unit);
        prefetch(next_unit(unit, false));
    }
    if (stage_ >= 2) {
        DeviceBuffer& b = unit == 0 ? bucket0_ : bucket_;
        mem_.memset(b.get(), 0, units_[unit].size() * es_);
        model_.map_unit(unit, nullptr, b.get());
    }
}

void ZeroEngine::after_backward(int unit) {
    const UnitSpan& u = units_[unit];
    const size_t n = slice(unit);
    switch (stage_) {
        case 0:
            if (last_micro_) comm_.all_reduce_sum(static_cast<char*>(full_grads_) + u.begin * es_, u.size(), dtype_);
            break;
        case 1:
            if (last_micro_) {
                char* g = static_cast<char*>(full_grads_) + u.begin * es_;
                comm_.reduce_scatter_sum(scratch_.get(), g, n, dtype_);
                mem_.copy(g + comm_.rank() * n * es_, scratch_.get(), n * es_);
            }
            break;
        default: {
            const DeviceBuffer& b = unit == 0 ? bucket0_ : bucket_;
            comm_.reduce_scatter_sum(scratch_.get(), b.get(), n, dtype_);
            add_(grad_shard_.as<char>() + shard_[unit].local * es_, scratch_.get(), n);
        }
    }
}

}  // namespace sixnd
