// restore_optimizer reads only what this rank's shard needs from each saved optimizer file, a
// few MiB at a time: the state it puts back must be bit for bit what the full-buffer restore
// (every file read whole into full buffers of this run's layout, this rank then taking its spans;
// kept here as the oracle) puts back, for every old and new world size and ZeRO stage, with and
// without master weights, and files with distinct contents where their spans overlap (ZeRO-0 at
// several ranks: the last file wins). Bad files are refused with the oracle's messages.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/cpu/cpu_ops.h"
#include "tests/util/test_util.h"
#include "train/checkpoint.h"
#include "train/checkpoint_state.h"

using namespace sixnd;
using namespace sixnd::test;

namespace {

// The full-buffer restore this change replaced, verbatim but for the names.
void oracle_restore(AdamW& opt, MemoryBackend& mem, const CheckpointReader& ck, const ParamLayout& now) {
    const ParamLayout written = written_layout(ck);
    const int ranks = ck.meta().world_size;
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
        if (opt.has_master() && saved_master)
            mem.copy_to_device(opt.master().as<float>() + s.local, full_master.data() + s.flat_begin, s.count * 4);
    }
}

struct Sharding {
    int world, stage;
};
const Sharding kShardings[] = {{1, 0}, {2, 0}, {2, 1}, {3, 2}, {4, 3}, {3, 0}};

size_t unit_align(int world) { return 64 * static_cast<size_t>(world); }

// Rank r's spans, cut as the ZeRO engine cuts them.
std::vector<ShardSpan> shard_of(const ParamLayout& l, Sharding sh, int r) {
    std::vector<ShardSpan> out;
    size_t local = 0;
    for (size_t u = 0; u < l.units().size(); u++) {
        const UnitInfo& x = l.units()[u];
        ShardSpan s;
        s.unit = static_cast<int>(u);
        s.count = sh.stage == 0 ? x.size() : x.size() / sh.world;
        s.flat_begin = sh.stage == 0 ? x.begin : x.begin + r * s.count;
        s.local = local;
        local += s.count;
        out.push_back(s);
    }
    return out;
}

HostMemory& host() {
    static HostMemory mem;
    return mem;
}

// One rank's optimizer over random parameters (padding included: seeded master weights are
// nonzero there, so a restore that leaves padding alone differs from one that zeroes it).
struct RankOpt {
    std::unique_ptr<Ops> ops;
    std::vector<float> p32;
    std::vector<bf16> p16;
    std::unique_ptr<AdamW> opt;

    RankOpt(const ParamLayout& l, Sharding sh, int r, bool bf16_master, uint64_t seed) {
        ops = make_cpu_ops(bf16_master ? DType::bf16 : DType::f32, host());
        p32 = random_floats(l.total(), seed, -0.5f, 0.5f);
        p16 = to_bf16(p32);
        OptimizerConfig cfg;
        AdamW::Locate at = [this, bf16_master](const ShardSpan& s) -> void* {
            return bf16_master ? static_cast<void*>(p16.data() + s.flat_begin) : static_cast<void*>(p32.data() + s.flat_begin);
        };
        opt = std::make_unique<AdamW>(*ops, l, shard_of(l, sh, r), cfg, at);
        EXPECT_EQ(opt->has_master(), bf16_master);
    }
};

std::vector<char> bytes_of(DeviceBuffer& b, size_t floats) {
    std::vector<char> out(floats * 4);
    if (floats) std::memcpy(out.data(), b.get(), out.size());
    return out;
}

CheckpointMeta meta_for(const GPTConfig& cfg, Sharding sh) {
    CheckpointMeta m;
    m.run_id = "0123456789abcdef";
    m.step = 1;
    m.applied_steps = 1;
    m.world_size = sh.world;
    m.zero_stage = sh.stage;
    m.unit_align = unit_align(sh.world);
    m.dtype = "fp32";
    m.model = cfg;
    m.config = nlohmann::json::object();
    m.data = nlohmann::json::object();
    return m;
}

// A checkpoint whose optim-rank<r>.bin holds files[r] as given (no params.bin: the optimizer
// restore does not read it).
std::string write_files(const std::string& root, const GPTConfig& cfg, Sharding sh, const std::vector<std::string>& files) {
    CheckpointWriter w(root, 1, true);
    for (size_t r = 0; r < files.size(); r++)
        w.add_file("optim-rank" + std::to_string(r) + ".bin", files[r].data(), files[r].size());
    return w.commit(meta_for(cfg, sh));
}

// The files a run at sharding sh saves, every rank's state random (and distinct: ZeRO-0 ranks'
// overlapping spans then tell which file wins). master_of[r]: whether rank r keeps master weights.
std::vector<std::string> saved_files(const GPTConfig& cfg, Sharding sh, const std::vector<bool>& master_of, uint64_t seed) {
    const ParamLayout l(cfg, unit_align(sh.world));
    std::vector<std::string> files;
    for (int r = 0; r < sh.world; r++) {
        RankOpt o(l, sh, r, master_of[r], seed + 10 * r);
        const size_t n = o.opt->size();
        uint64_t s = seed + 100 * r + 1;
        for (DeviceBuffer* b : {&o.opt->master(), &o.opt->m(), &o.opt->v()}) {
            if (!*b) continue;
            const std::vector<float> x = random_floats(n, s++, 0.0f, 1.0f);
            std::memcpy(b->get(), x.data(), n * 4);
        }
        std::string f;
        write_optimizer(*o.opt, host(), [&](const void* p, size_t bytes) { f.append(static_cast<const char*>(p), bytes); });
        files.push_back(std::move(f));
    }
    return files;
}

// Restores ck at every rank of every sharding, with and without master weights, and compares
// with the oracle bit for bit. Returns how many restores were compared.
int compare_everywhere(const CheckpointReader& ck, const GPTConfig& cfg) {
    int compared = 0;
    for (Sharding now_sh : kShardings) {
        const ParamLayout now(cfg, unit_align(now_sh.world));
        for (int r = 0; r < now_sh.world; r++) {
            for (bool master : {false, true}) {
                RankOpt got(now, now_sh, r, master, 77), want(now, now_sh, r, master, 77);
                restore_optimizer(*got.opt, host(), ck, now);
                oracle_restore(*want.opt, host(), ck, now);
                const size_t n = got.opt->size();
                const std::string at = "saved at np" + std::to_string(ck.meta().world_size) + " zero" +
                                       std::to_string(ck.meta().zero_stage) + ", restored at np" + std::to_string(now_sh.world) +
                                       " zero" + std::to_string(now_sh.stage) + " rank " + std::to_string(r) +
                                       (master ? " with master" : " without master");
                EXPECT_TRUE(bytes_of(got.opt->m(), n) == bytes_of(want.opt->m(), n)) << "m, " << at;
                EXPECT_TRUE(bytes_of(got.opt->v(), n) == bytes_of(want.opt->v(), n)) << "v, " << at;
                if (master) {
                    EXPECT_TRUE(bytes_of(got.opt->master(), n) == bytes_of(want.opt->master(), n)) << "master, " << at;
                }
                compared++;
            }
        }
    }
    return compared;
}

GPTConfig model() { return preset_config("tiny"); }

}  // namespace

TEST(OptimizerRestore, MatchesTheFullBufferRestoreAtEverySharding) {
    const GPTConfig cfg = model();
    for (Sharding saved : kShardings) {
        for (bool master : {false, true}) {
            TempDir tmp("sixnd-optrestore-");
            const std::vector<bool> master_of(saved.world, master);
            const CheckpointReader ck(write_files(tmp.dir, cfg, saved, saved_files(cfg, saved, master_of, 5 + saved.world)));
            EXPECT_EQ(compare_everywhere(ck, cfg), 2 * (1 + 2 + 2 + 3 + 4 + 3));
        }
    }
}

TEST(OptimizerRestore, MasterWeightsComeBackOnlyWhenEveryFileHasThem) {
    const GPTConfig cfg = model();
    for (Sharding saved : {Sharding{2, 0}, Sharding{2, 1}, Sharding{3, 3}}) {
        TempDir tmp("sixnd-optrestore-");
        std::vector<bool> master_of(saved.world, true);
        master_of[1] = false;
        const CheckpointReader ck(write_files(tmp.dir, cfg, saved, saved_files(cfg, saved, master_of, 9)));
        compare_everywhere(ck, cfg);
        // The seeded master weights stand.
        const ParamLayout now(cfg, unit_align(1));
        RankOpt got(now, {1, 0}, 0, true, 77), fresh(now, {1, 0}, 0, true, 77);
        restore_optimizer(*got.opt, host(), ck, now);
        const size_t n = got.opt->size();
        EXPECT_TRUE(bytes_of(got.opt->master(), n) == bytes_of(fresh.opt->master(), n));
        EXPECT_FALSE(bytes_of(got.opt->m(), n) == bytes_of(fresh.opt->m(), n));
    }
}

TEST(OptimizerRestore, RestoresWhatWasSavedAtTheSameSharding) {
    const GPTConfig cfg = model();
    const Sharding sh{2, 2};
    const ParamLayout l(cfg, unit_align(sh.world));
    TempDir tmp("sixnd-optrestore-");
    const std::vector<std::string> files = saved_files(cfg, sh, {true, true}, 3);
    const CheckpointReader ck(write_files(tmp.dir, cfg, sh, files));
    for (int r = 0; r < sh.world; r++) {
        RankOpt o(l, sh, r, true, 1);
        restore_optimizer(*o.opt, host(), ck, l);
        std::string back;
        write_optimizer(*o.opt, host(), [&](const void* p, size_t bytes) { back.append(static_cast<const char*>(p), bytes); });
        // Equal but for padding, which comes back as zero.
        ASSERT_EQ(back.size(), files[r].size());
        size_t differ = 0, padding = 0;
        const size_t n = o.opt->size(), head = back.size() - 3 * n * 4;
        std::vector<bool> is_param(l.total(), false);
        for (const TensorInfo& t : l.tensors())
            for (size_t i = 0; i < t.numel; i++) is_param[t.offset + i] = true;
        for (const ShardSpan& s : o.opt->spans())
            for (size_t i = 0; i < s.count; i++)
                for (size_t a = 0; a < 3; a++) {
                    const size_t at = head + (a * n + s.local + i) * 4;
                    const bool same = std::memcmp(back.data() + at, files[r].data() + at, 4) == 0;
                    if (is_param[s.flat_begin + i]) {
                        differ += !same;
                    } else {
                        float x;
                        std::memcpy(&x, back.data() + at, 4);
                        padding += x != 0.0f;
                    }
                }
        EXPECT_EQ(differ, 0u) << "rank " << r;
        EXPECT_EQ(padding, 0u) << "rank " << r;
    }
}

TEST(OptimizerRestore, RefusesBadFilesWithTheFullBufferRestoresMessages) {
    const GPTConfig cfg = model();
    const Sharding sh{2, 1};
    const std::vector<std::string> good = saved_files(cfg, sh, {false, false}, 4);
    const ParamLayout now(cfg, unit_align(1));
    auto header_of = [](const std::string& f) {
        OptimHeader h;
        std::memcpy(&h, f.data(), sizeof h);
        return h;
    };
    auto with_header = [](std::string f, const OptimHeader& h) {
        std::memcpy(&f[0], &h, sizeof h);
        return f;
    };
    auto with_span = [](std::string f, size_t i, const SpanRecord& s) {
        std::memcpy(&f[sizeof(OptimHeader) + i * sizeof s], &s, sizeof s);
        return f;
    };
    const OptimHeader h = header_of(good[1]);
    OptimHeader many = h;
    many.spans = uint64_t(1) << 61;  // times 24 wraps around
    OptimHeader huge = h;
    huge.floats = (uint64_t(1) << 62) + 1;
    SpanRecord past{};
    std::memcpy(&past, good[1].data() + sizeof(OptimHeader) + sizeof past, sizeof past);
    SpanRecord beyond = past;
    past.flat_begin = ParamLayout(cfg, unit_align(sh.world)).total() - past.count + 1;
    beyond.local = h.floats - beyond.count + 1;
    SpanRecord wraps = beyond;
    wraps.local = ~uint64_t(0) - 2;
    struct Case {
        std::string what, file, fault;
        bool oracle_too;
    };
    const std::vector<Case> cases = {
        {"bad magic", "NOTSIXND" + good[1].substr(8), "not a sixnd optimizer-state file", true},
        {"shorter than a header", good[1].substr(0, 20), "not a sixnd optimizer-state file", true},
        {"a byte too many", good[1] + "x", "size does not match its header", true},
        {"a byte too few", good[1].substr(0, good[1].size() - 1), "size does not match its header", true},
        {"span count that wraps", with_header(good[1], many), "size does not match its header", false},
        {"float count that wraps", with_header(good[1], huge), "size does not match its header", false},
        {"span past the model", with_span(good[1], 1, past), "span outside the model", true},
        {"span past the file's floats", with_span(good[1], 1, beyond), "span outside the model", true},
        {"span whose end wraps", with_span(good[1], 1, wraps), "span outside the model", false},
    };
    for (const Case& c : cases) {
        TempDir tmp("sixnd-optrestore-");
        const CheckpointReader ck(write_files(tmp.dir, cfg, sh, {good[0], c.file}));
        const std::string want = ck.path_of("optim-rank1.bin") + ": " + c.fault;
        RankOpt o(now, {1, 0}, 0, false, 1);
        const std::vector<char> before = bytes_of(o.opt->m(), o.opt->size());
        try {
            restore_optimizer(*o.opt, host(), ck, now);
            ADD_FAILURE() << c.what << ": accepted";
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()), want) << c.what;
        }
        EXPECT_TRUE(bytes_of(o.opt->m(), o.opt->size()) == before) << c.what << ": the state changed before the error";
        if (!c.oracle_too) continue;
        try {
            oracle_restore(*o.opt, host(), ck, now);
            ADD_FAILURE() << c.what << ": the oracle accepted it";
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()), want) << c.what << " (oracle)";
        }
    }
    // A file meta.json does not list.
    TempDir tmp("sixnd-optrestore-");
    const CheckpointReader ck(write_files(tmp.dir, cfg, sh, {good[0]}));
    RankOpt o(now, {1, 0}, 0, false, 1);
    std::string got, want;
    try {
        restore_optimizer(*o.opt, host(), ck, now);
    } catch (const Error& e) {
        got = e.what();
    }
    try {
        oracle_restore(*o.opt, host(), ck, now);
    } catch (const Error& e) {
        want = e.what();
    }
    EXPECT_EQ(got, ck.dir() + ": checkpoint has no file 'optim-rank1.bin'");
    EXPECT_EQ(got, want);
}
