#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/memory.h"

using namespace sixnd;

TEST(MemoryLedger, TracksCurrentAndPeakPerCategory) {
    HostMemory mem;
    void* a = mem.allocate(1000, MemCategory::params);
    void* b = mem.allocate(500, MemCategory::activations);
    EXPECT_EQ(mem.ledger().current(MemCategory::params), 1000u);
    EXPECT_EQ(mem.ledger().current_total(), 1500u);
    mem.release(b);
    void* c = mem.allocate(200, MemCategory::activations);
    EXPECT_EQ(mem.ledger().current(MemCategory::activations), 200u);
    EXPECT_EQ(mem.ledger().peak(MemCategory::activations), 500u);
    EXPECT_EQ(mem.ledger().peak_total(), 1500u);
    mem.release(a);
    mem.release(c);
    EXPECT_EQ(mem.ledger().current_total(), 0u);
}

// A start-up measurement's buffers come and go without leaving the peaks they would have set;
// what is held when the peaks are restored still counts.
TEST(MemoryLedger, RestoredPeaksForgetMemoryInBetween) {
    HostMemory mem;
    void* a = mem.allocate(1000, MemCategory::params);
    const MemoryLedger::Peaks before = mem.ledger().peaks();
    void* w = mem.allocate(5000, MemCategory::workspace);
    mem.release(w);
    void* b = mem.allocate(300, MemCategory::activations);
    mem.ledger().restore_peaks(before);
    EXPECT_EQ(mem.ledger().peak(MemCategory::workspace), 0u);
    EXPECT_EQ(mem.ledger().peak(MemCategory::params), 1000u);
    EXPECT_EQ(mem.ledger().peak(MemCategory::activations), 300u);
    EXPECT_EQ(mem.ledger().peak_total(), 1300u);
    mem.release(a);
    mem.release(b);
}

TEST(MemoryLedger, DeviceBufferReleasesOnDestruction) {
    HostMemory mem;
    {
        DeviceBuffer buf(&mem, 4096, MemCategory::grads);
        EXPECT_EQ(mem.ledger().current(MemCategory::grads), 4096u);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(buf.get()) % 64, 0u);
    }
    EXPECT_EQ(mem.ledger().current(MemCategory::grads), 0u);
}

TEST(MemoryLedger, ForeignPointerIsAnError) {
    HostMemory mem;
    int x = 0;
    EXPECT_THROW(mem.release(&x), Error);
}

// A size whose rounding up to the 64-byte alignment wraps around (a size computed from bad input)
// is out of memory, not a 64-byte block.
TEST(HostMemory, ASizeTooLargeToRoundUpIsOutOfMemory) {
    HostMemory mem;
    for (size_t bytes : {SIZE_MAX, SIZE_MAX - 62}) {
        EXPECT_THROW(mem.allocate(bytes, MemCategory::workspace), Error) << bytes;
        EXPECT_EQ(mem.ledger().current_total(), 0u) << bytes;
    }
}

// holds(): a range inside one live allocation of the category, and nothing else.
TEST(MemoryLedger, HoldsFindsTheAllocationAroundARange) {
    HostMemory mem;
    DeviceBuffer p(&mem, 1000, MemCategory::params), w(&mem, 1000, MemCategory::workspace);
    const char* b = p.as<char>();
    EXPECT_TRUE(mem.holds(b, 1000, MemCategory::params));
    EXPECT_TRUE(mem.holds(b + 10, 990, MemCategory::params));
    EXPECT_FALSE(mem.holds(b + 10, 991, MemCategory::params));
    EXPECT_FALSE(mem.holds(b, 1000, MemCategory::grads));
    EXPECT_FALSE(mem.holds(w.get(), 8, MemCategory::params));
    int x = 0;
    EXPECT_FALSE(mem.holds(&x, sizeof x, MemCategory::params));
    const void* gone = p.get();
    p.reset();
    EXPECT_FALSE(mem.holds(gone, 8, MemCategory::params));
}

// Fills and copies from 8 MiB up run in 1 MiB pieces over the threads: every byte of a size that
// is no multiple of the piece is written, and none beyond it.
TEST(HostMemory, LargeFillsAndCopiesCoverEveryByteAndNoMore) {
    HostMemory mem;
    for (size_t bytes : {size_t(1000), (size_t(8) << 20) + 12345}) {
        std::vector<unsigned char> buf(bytes + 64, 0x11), src(bytes);
        for (size_t i = 0; i < bytes; i++) src[i] = static_cast<unsigned char>(i * 2654435761u >> 24);
        mem.memset(buf.data(), 0xAB, bytes);
        EXPECT_EQ(std::count(buf.begin(), buf.begin() + static_cast<long>(bytes), 0xAB), static_cast<long>(bytes)) << bytes;
        EXPECT_EQ(std::count(buf.begin() + static_cast<long>(bytes), buf.end(), 0x11), 64) << bytes;
        mem.copy_to_device(buf.data(), src.data(), bytes);
        EXPECT_TRUE(std::equal(src.begin(), src.end(), buf.begin())) << bytes;
        std::vector<unsigned char> back(bytes + 64, 0x22);
        mem.copy_to_host(back.data(), buf.data(), bytes);
        EXPECT_TRUE(std::equal(src.begin(), src.end(), back.begin())) << bytes;
        EXPECT_EQ(std::count(back.begin() + static_cast<long>(bytes), back.end(), 0x22), 64) << bytes;
    }
}

// Each unit's boundary, on both sides, and where two decimals round up into the next unit
// (the values by hand: bytes / 1024^k, printed with two decimals).
TEST(FormatBytes, EachUnitEndsWhereItsPrintedValueReaches1024) {
    const std::pair<size_t, const char*> cases[] = {
        {0, "0 B"},
        {1023, "1023 B"},
        {1024, "1.00 KiB"},
        {1048570, "1023.99 KiB"},
        {1048575, "1.00 MiB"},
        {1048576, "1.00 MiB"},
        {1073736581, "1023.99 MiB"},
        {1073741823, "1.00 GiB"},
        {1073741824, "1.00 GiB"},
        {(size_t(1) << 40) - 1, "1.00 TiB"},
        {size_t(1) << 50, "1.00 PiB"},
        {SIZE_MAX, "16.00 EiB"},
    };
    for (const auto& [bytes, text] : cases) EXPECT_EQ(format_bytes(bytes), text) << bytes;
}
