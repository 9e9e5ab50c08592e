#include "train/checkpoint_state.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>
#include <utility>

#include "core/error.h"
#include "core/finite.h"
#include "core/read_file.h"

namespace sixnd {

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

namespace {

// One saved optimizer file: its header and span records, checked against the file's size and
// the written layout without reading its arrays.
struct SavedState {
    std::string name, where;
    OptimHeader h{};
    std::vector<SpanRecord> spans;
    uint64_t head = 0;  // bytes before the first array
};

SavedState read_saved_header(const CheckpointReader& ck, int rank, const ParamLayout& written) {
    SavedState s;
    s.name = "optim-rank" + std::to_string(rank) + ".bin";
    s.where = ck.path_of(s.name);
    if (!ck.has_file(s.name)) throw Error(ck.dir(), "checkpoint has no file '" + s.name + "'");
    const FileReader f(s.where);
    if (f.read(&s.h, 0, sizeof s.h) < sizeof s.h || std::memcmp(s.h.magic, "SIXNDOPT", 8) != 0)
        throw Error(s.where, "not a sixnd optimizer-state file");
    const uint64_t arrays = s.h.has_master ? 3 : 2;
    // The header's counts are bounded by the file's size before they are multiplied.
    const uint64_t bytes = f.size();
    if (s.h.spans > bytes / sizeof(SpanRecord) || s.h.floats > bytes / (4 * arrays) ||
        bytes != sizeof s.h + s.h.spans * sizeof(SpanRecord) + arrays * s.h.floats * 4)
        throw Error(s.where, "size does not match its header");
    s.spans.resize(s.h.spans);
    f.read_exactly(s.spans.data(), sizeof s.h, s.spans.size() * sizeof(SpanRecord));
    s.head = sizeof s.h + s.h.spans * sizeof(SpanRecord);
    for (const SpanRecord& r : s.spans)
        if (r.count > s.h.floats || r.local > s.h.floats - r.count || r.count > written.total() ||
            r.flat_begin > written.total() - r.count)
            throw Error(s.where, "span outside the model");
    return s;
}

// count floats of one saved file's array, from its element src to this rank's shard element dst.
struct Piece {
    size_t file;
    uint64_t src;
    size_t dst, count;
};

// Removes [b, e) from the disjoint intervals `covered` would leave uncovered: appends the
// uncovered parts to gaps, and (when insert) adds [b, e) to covered.
void uncovered(std::map<size_t, size_t>& covered, size_t b, size_t e, bool insert,
               std::vector<std::pair<size_t, size_t>>& gaps) {
    auto it = covered.upper_bound(b);
    if (it != covered.begin() && std::prev(it)->second >= b) --it;
    size_t pos = b, nb = b, ne = e;
    while (it != covered.end() && it->first <= e) {
        if (it->first > pos) gaps.emplace_back(pos, it->first);
        pos = std::max(pos, it->second);
        if (!insert) {
            ++it;
            continue;
        }
        nb = std::min(nb, it->first);
        ne = std::max(ne, it->second);
        it = covered.erase(it);
    }
    if (pos < e) gaps.emplace_back(pos, e);
    if (insert) covered[nb] = ne;
}

}  // namespace

void restore_optimizer(AdamW& opt, MemoryBackend& mem, const CheckpointReader& ck, const ParamLayout& now) {
    const ParamLayout written = written_layout(ck);
    const int ranks = ck.meta().world_size;
    // Every saved file's header and spans, checked before any state is touched.
    std::vector<SavedState> saved;
    bool saved_master = true;
    for (int r = 0; r < ranks; r++) {
        saved.push_back(read_saved_header(ck, r, written));
        saved_master = saved_master && saved.back().h.has_master;
    }

    // Where every saved element lands in this rank's shard: each saved span is carried tensor by
    // tensor from the written layout to `now` (as relayout_range does; padding is dropped) and
    // cut to this rank's spans. Pieces follow the order in which a full buffer of `now` would be
    // written (file by file, span by span), where a later write of an element wins.
    const auto& ft = written.tensors();
    const auto& tt = now.tensors();
    if (ft.size() != tt.size()) throw std::logic_error("restore_optimizer: the checkpoint's model and this run's differ");
    std::vector<const ShardSpan*> mine;
    for (const ShardSpan& s : opt.spans())
        if (s.count > 0) mine.push_back(&s);
    std::sort(mine.begin(), mine.end(), [](const ShardSpan* a, const ShardSpan* b) { return a->flat_begin < b->flat_begin; });
    std::vector<Piece> pieces;
    for (size_t f = 0; f < saved.size(); f++) {
        for (const SpanRecord& s : saved[f].spans) {
            const uint64_t s_end = s.flat_begin + s.count;
            auto t = std::upper_bound(ft.begin(), ft.end(), s.flat_begin,
                                      [](uint64_t at, const TensorInfo& x) { return at < x.offset + x.numel; });
            for (; t != ft.end() && t->offset < s_end; ++t) {
                const size_t lo = std::max<uint64_t>(s.flat_begin, t->offset), hi = std::min<uint64_t>(s_end, t->offset + t->numel);
                if (lo >= hi) continue;
                const size_t d_lo = tt[t - ft.begin()].offset + (lo - t->offset), d_hi = d_lo + (hi - lo);
                auto m = std::upper_bound(mine.begin(), mine.end(), d_lo,
                                          [](size_t at, const ShardSpan* x) { return at < x->flat_begin + x->count; });
                for (; m != mine.end() && (*m)->flat_begin < d_hi; ++m) {
                    const size_t a = std::max(d_lo, (*m)->flat_begin), b = std::min(d_hi, (*m)->flat_begin + (*m)->count);
                    if (a >= b) continue;
                    const Piece p{f, s.local + (lo - s.flat_begin) + (a - d_lo), (*m)->local + (a - (*m)->flat_begin), b - a};
                    Piece* last = pieces.empty() ? nullptr : &pieces.back();
                    if (last && last->file == p.file && last->src + last->count == p.src && last->dst + last->count == p.dst)
                        last->count += p.count;
                    else
                        pieces.push_back(p);
                }
            }
        }
    }
    // Only what no later piece overwrites is read: walked backwards, each piece keeps the parts
    // of the shard not yet covered.
    std::map<size_t, size_t> covered;
    std::vector<Piece> reads;
    std::vector<std::pair<size_t, size_t>> gaps;
    for (size_t i = pieces.size(); i-- > 0;) {
        const Piece& p = pieces[i];
        gaps.clear();
        uncovered(covered, p.dst, p.dst + p.count, true, gaps);
        for (const auto& [a, b] : gaps) reads.push_back(Piece{p.file, p.src + (a - p.dst), a, b - a});
    }
    pieces.clear();
    pieces.shrink_to_fit();
    std::sort(reads.begin(), reads.end(), [](const Piece& a, const Piece& b) { return a.file != b.file ? a.file < b.file : a.src < b.src; });

    // Without saved master weights (an FP32 run, or master weights off), the master copy the
    // optimizer seeded from the parameters stands.
    const bool restore_master = opt.has_master() && saved_master;
    std::vector<float*> targets{opt.m().as<float>(), opt.v().as<float>()};
    if (restore_master) targets.push_back(opt.master().as<float>());
    // What no saved span reaches (padding of `now`) is zero, as in a fresh full buffer.
    gaps.clear();
    for (const ShardSpan& s : opt.spans())
        if (s.count > 0) uncovered(covered, s.local, s.local + s.count, false, gaps);
    for (const auto& [a, b] : gaps)
        for (float* t : targets) mem.memset(t + a, 0, (b - a) * 4);

    // The file data, a few MiB at a time, straight to the optimizer's buffers.
    constexpr size_t kPieceFloats = size_t(1) << 20;
    size_t largest = 0;
    for (const Piece& p : reads) largest = std::max(largest, p.count);
    std::vector<float> buf(std::min(kPieceFloats, largest));
    for (size_t i = 0; i < reads.size();) {
        const size_t f = reads[i].file;
        size_t j = i;
        while (j < reads.size() && reads[j].file == f) j++;
        const SavedState& s = saved[f];
        const FileReader file(s.where);
        if (file.size() != s.head + (s.h.has_master ? 3 : 2) * s.h.floats * 4)
            throw Error(s.where, "size does not match its header");
        const uint64_t m_array = s.h.has_master ? 1 : 0;
        for (size_t k = 0; k < targets.size(); k++) {
            const uint64_t array = k < 2 ? m_array + k : 0;  // m, v, then master (the file's first array)
            for (size_t q = i; q < j; q++) {
                const Piece& p = reads[q];
                for (size_t at = 0; at < p.count; at += buf.size()) {
                    const size_t n = std::min(buf.size(), p.count - at);
                    file.read_exactly(buf.data(), s.head + (array * s.h.floats + p.src + at) * 4, n * 4);
                    mem.copy_to_device(targets[k] + p.dst + at, buf.data(), n * 4);
                }
            }
        }
        i = j;
    }
}

std::vector<char> restore_params(const CheckpointReader& ck, const ParamLayout& now) {
    const ParamLayout written = written_layout(ck);
    const DType t = parse_dtype(ck.meta().dtype);
    const size_t es = dtype_size(t);
    if (!ck.has_file("params.bin")) throw Error(ck.dir(), "checkpoint has no file 'params.bin'");
    const FileReader file(ck.path_of("params.bin"));
    if (file.size() != written.total() * es)
        throw Error(ck.path_of("params.bin"), std::to_string(file.size()) + " bytes, but the model in meta.json takes " +
                                                  std::to_string(written.total() * es));
    // Each tensor read straight to its place in `now` (as relayout_range places it): no second
    // copy of the parameters on the host. Padding stays zero.
    const auto& ft = written.tensors();
    const auto& tt = now.tensors();
    if (ft.size() != tt.size()) throw std::logic_error("restore_params: the checkpoint's model and this run's differ");
    std::vector<char> out(now.total() * es, 0);
    for (size_t i = 0; i < ft.size(); i++) file.read_exactly(out.data() + tt[i].offset * es, ft[i].offset * es, ft[i].numel * es);
    if (const size_t bad = count_non_finite(out.data(), now.total(), t))
        throw Error(ck.path_of("params.bin"), "holds " + std::to_string(bad) + " non-finite (NaN or Inf) parameters");
    return out;
}

}  // namespace sixnd
