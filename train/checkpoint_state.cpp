#include "train/checkpoint_state.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/error.h"
#include "core/finite.h"

namespace sixnd {

namespace {

struct OptimHeader {
    char magic[8];
    uint64_t spans, has_master, floats;
};
struct SpanRecord {
    uint64_t flat_begin, count, local;
};

}  // namespace

void write_optimizer(AdamW& opt, MemoryBackend& mem, const std::function<void(const void*, size_t)>& out) {
    const size_t n = opt.size();
    OptimHeader h{};
    std::memcpy(h.magic, "SIXNDOPT", 8);
    h.spans = opt.spans().size();
    h.has_master = opt.has_master();
    h.floats = n;
    out(&h, sizeof h);
    for (const ShardSpan& s : opt.spans()) {
        const SpanRecord r{s.flat_begin, s.count, s.local};
        out(&r, sizeof r);
    }
    constexpr size_t kPiece = size_t(4) << 20;
    std::vector<char> piece(std::min(kPiece, n * 4));
    for (DeviceBuffer* b : {&opt.master(), &opt.m(), &opt.v()}) {
        if (!*b) continue;
        for (size_t at = 0; at < n * 4; at += piece.size()) {
            const size_t bytes = std::min(piece.size(), n * 4 - at);
            mem.copy_to_host(piece.data(), static_cast<const char*>(b->get()) + at, bytes);
            out(piece.data(), bytes);
        }
    }
}

std::vector<char> pack_optimizer(AdamW& opt, MemoryBackend& mem) {
    std::vector<char> buf(sizeof(OptimHeader) + opt.spans().size() * sizeof(SpanRecord) +
                          (opt.has_master() ? 3 : 2) * opt.size() * 4);
    size_t at = 0;
    write_optimizer(opt, mem, [&](const void* p, size_t bytes) {
        if (bytes > buf.size() - at) throw std::logic_error("pack_optimizer: the state is larger than its header says");
        std::memcpy(buf.data() + at, p, bytes);
        at += bytes;
    });
    return buf;
}

OptimizerArrays unpack_optimizer(const std::vector<char>& packed, const std::string& where) {
    OptimHeader h{};
    if (packed.size() < sizeof h || std::memcmp(packed.data(), "SIXNDOPT", 8) != 0) throw Error(where, "not a packed optimizer state");
    std::memcpy(&h, packed.data(), sizeof h);
    const size_t arrays = h.has_master ? 3 : 2;
    const size_t head = sizeof h + h.spans * sizeof(SpanRecord);
    if (packed.size() != head + arrays * h.floats * 4) throw Error(where, "packed optimizer state: size does not match its header");
    OptimizerArrays a;
    const char* p = packed.data() + head;
    for (std::vector<float>* dst : {&a.master, &a.m, &a.v}) {
        if (dst == &a.master && !h.has_master) continue;
        dst->resize(h.floats);
        std::memcpy(dst->data(), p, h.floats * 4);
        p += h.floats * 4;
    }
    return a;
}

void restore_packed_optimizer(AdamW& opt, MemoryBackend& mem, const std::vector<char>& packed) {
    OptimHeader h{};
    std::memcpy(&h, packed.data(), sizeof h);
    if (h.floats != opt.size() || h.spans != opt.spans().size() || static_cast<bool>(h.has_master) != opt.has_master())
        throw Error("optimizer snapshot", "was taken from another optimizer layout");
    const char* p = packed.data() + sizeof h + h.spans * sizeof(SpanRecord);
    for (DeviceBuffer* b : {&opt.master(), &opt.m(), &opt.v()}) {
        if (!*b) continue;
        mem.copy_to_device(b->get(), p, h.floats * 4);
        p += h.floats * 4;
    }
}

ParamLayout written_layout(const CheckpointReader& ck) { return ParamLayout(ck.meta().model, ck.meta().unit_align); }

void restore_optimizer(AdamW& opt, MemoryBackend& mem, const CheckpointReader& ck, const ParamLayout& now) {
    const ParamLayout written = written_layout(ck);
    const int ranks = ck.meta().world_size;
    // Every saved state lands in full buffers of this run's layout; then this rank takes its spans.
    std::vector<float> full_master(now.total()), full_m(now.total()), full_v(now.total());
    bool saved_master = true;
    for (int r = 0; r < ranks; r++) {
        const std::string name = "optim-rank" + std::to_string(r) + ".bin";
        const std::string where = ck.path_of(name);
        const std::string buf = ck.read_file(name);
        OptimHeader h{};
        if (buf.size() < sizeof h || std::memcmp(buf.data(), "SIXNDOPT", 8) != 0)
            throw Error(where, "not a sixnd optimizer-state file");
        std::memcpy(&h, buf.data(), sizeof h);
        const size_t arrays = h.has_master ? 3 : 2;
        if (buf.size() != sizeof h + h.spans * sizeof(SpanRecord) + arrays * h.floats * 4)
            throw Error(where, "size does not match its header");
        saved_master = saved_master && h.has_master;
        const char* spans = buf.data() + sizeof h;
        const char* data = spans + h.spans * sizeof(SpanRecord);
        for (uint64_t i = 0; i < h.spans; i++) {
            SpanRecord s{};
            std::memcpy(&s, spans + i * sizeof s, sizeof s);
            if (s.local + s.count > h.floats || s.flat_begin + s.count > written.total())
                throw Error(where, "span outside the model");
            size_t a = 0;
            for (std::vector<float>* full : {&full_master, &full_m, &full_v}) {
                if (full == &full_master && !h.has_master) continue;
                relayout_range(written, now, s.flat_begin, s.count, data + (a * h.floats + s.local) * 4, full->data(), 4);
                a++;
            }
        }
    }
    for (const ShardSpan& s : opt.spans()) {
        mem.copy_to_device(opt.m().as<float>() + s.local, full_m.data() + s.flat_begin, s.count * 4);
        mem.copy_to_device(opt.v().as<float>() + s.local, full_v.data() + s.flat_begin, s.count * 4);
        // Without saved master weights (an FP32 run, or master weights off), the master copy
        // the optimizer seeded from the parameters stands.
        if (opt.has_master() && saved_master)
            mem.copy_to_device(opt.master().as<float>() + s.local, full_master.data() + s.flat_begin, s.count * 4);
    }
}

std::vector<char> restore_params(const CheckpointReader& ck, const ParamLayout& now) {
    const ParamLayout written = written_layout(ck);
    const DType t = parse_dtype(ck.meta().dtype);
    const size_t es = dtype_size(t);
    const std::string p = ck.read_file("params.bin");
    if (p.size() != written.total() * es)
        throw Error(ck.path_of("params.bin"), std::to_string(p.size()) + " bytes, but the model in meta.json takes " +
                                                  std::to_string(written.total() * es));
    if (const size_t bad = count_non_finite(p.data(), written.total(), t))
        throw Error(ck.path_of("params.bin"), "holds " + std::to_string(bad) + " non-finite (NaN or Inf) parameters");
    std::vector<char> out(now.total() * es, 0);
    relayout_range(written, now, 0, written.total(), p.data(), out.data(), es);
    return out;
}

}  // namespace sixnd
