#include "core/memory.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace sixnd {

const char* mem_category_name(MemCategory c) {
    static const char* names[] = {"params", "grads", "master", "adam_m", "adam_v", "activations", "workspace", "weight_copies"};
    return names[static_cast<int>(c)];
}

void MemoryLedger::add(MemCategory c, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    int i = static_cast<int>(c);
    cur_[i] += bytes;
    if (cur_[i] > peak_[i]) peak_[i] = cur_[i];
    cur_total_ += bytes;
    if (cur_total_ > peak_total_) peak_total_ = cur_total_;
}

void MemoryLedger::sub(MemCategory c, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    cur_[static_cast<int>(c)] -= bytes;
    cur_total_ -= bytes;
}

size_t MemoryLedger::current(MemCategory c) const {
    std::lock_guard<std::mutex> lock(mu_);
    return cur_[static_cast<int>(c)];
}
size_t MemoryLedger::peak(MemCategory c) const {
    std::lock_guard<std::mutex> lock(mu_);
    return peak_[static_cast<int>(c)];
}
size_t MemoryLedger::current_total() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cur_total_;
}
size_t MemoryLedger::peak_total() const {
    std::lock_guard<std::mutex> lock(mu_);
    return peak_total_;
}
void MemoryLedger::reset_peaks() {
    std::lock_guard<std::mutex> lock(mu_);
    peak_ = cur_;
    peak_total_ = cur_total_;
}
MemoryLedger::Peaks MemoryLedger::peaks() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {peak_, peak_total_};
}
void MemoryLedger::restore_peaks(const Peaks& p) {
    std::lock_guard<std::mutex> lock(mu_);
    for (int i = 0; i < kMemCategories; i++) peak_[i] = std::max(p.by_category[i], cur_[i]);
    peak_total_ = std::max(p.total, cur_total_);
}

void* MemoryBackend::allocate(size_t bytes, MemCategory c) {
    void* p = raw_allocate(bytes);
    if (!p) throw Error(name(), "out of memory allocating " + format_bytes(bytes) + " for " + mem_category_name(c));
    {
        std::lock_guard<std::mutex> lock(mu_);
        allocs_[reinterpret_cast<uintptr_t>(p)] = Alloc{bytes, c};
    }
    ledger_.add(c, bytes);
    return p;
}

void MemoryBackend::release(void* p) {
    if (!p) return;
    Alloc a{};
    {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = allocs_.find(reinterpret_cast<uintptr_t>(p));
        if (it == allocs_.end()) throw Error(name(), "release of a pointer this backend did not allocate");
        a = it->second;
        allocs_.erase(it);
    }
    ledger_.sub(a.category, a.bytes);
    raw_free(p);
}

bool MemoryBackend::holds(const void* p, size_t bytes, MemCategory c) {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = allocs_.upper_bound(begin);
    if (it == allocs_.begin()) return false;
    --it;
    return it->second.category == c && begin + bytes <= it->first + it->second.bytes;
}

HostMemory::~HostMemory() = default;

void* HostMemory::raw_allocate(size_t bytes) {
    if (bytes > SIZE_MAX - 63) return nullptr;  // the rounding below would wrap to a tiny block
    size_t rounded = (bytes + 63) / 64 * 64;
    return std::aligned_alloc(64, rounded ? rounded : 64);
}
void HostMemory::raw_free(void* p) { std::free(p); }
namespace {
// Large fills and copies (every step zeroes the gradients: 249 MB for GPT-2 124M in bf16) in
// pieces spread over the threads: one core's stores reach about half the memory's write
// bandwidth (249 MB: 25 ms on one core, 13-15 ms on two, on a 2-core Xeon VM). Small ones stay
// on the calling thread, where starting the threads would cost more than they save.
constexpr size_t kPiece = size_t(1) << 20, kThreadsFrom = size_t(8) << 20;

template <typename F>
void in_pieces(size_t bytes, F&& f) {
    if (bytes < kThreadsFrom) {
        f(0, bytes);
        return;
    }
    const size_t pieces = (bytes + kPiece - 1) / kPiece;
#pragma omp parallel for schedule(static)
    for (size_t p = 0; p < pieces; p++) f(p * kPiece, std::min(kPiece, bytes - p * kPiece));
}

void copy_pieces(void* dst, const void* src, size_t bytes) {
    in_pieces(bytes, [=](size_t at, size_t n) { std::memcpy(static_cast<char*>(dst) + at, static_cast<const char*>(src) + at, n); });
}
}  // namespace

void HostMemory::copy_to_device(void* dst, const void* src, size_t bytes) { copy_pieces(dst, src, bytes); }
void HostMemory::copy_to_host(void* dst, const void* src, size_t bytes) { copy_pieces(dst, src, bytes); }
void HostMemory::copy(void* dst, const void* src, size_t bytes) { std::memmove(dst, src, bytes); }
void HostMemory::memset(void* dst, int value, size_t bytes) {
    in_pieces(bytes, [=](size_t at, size_t n) { std::memset(static_cast<char*>(dst) + at, value, n); });
}

// The unit is chosen by the number as printed: 1048575 bytes is 1023.999 KiB, which two decimals
// round to "1024.00", so it reads "1.00 MiB".
std::string format_bytes(size_t bytes) {
    if (bytes < 1024) return std::to_string(bytes) + " B";
    static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    constexpr size_t last = sizeof units / sizeof units[0] - 1;
    char buf[64];
    double value = static_cast<double>(bytes);
    for (size_t u = 0;; u++) {
        value /= 1024.0;
        std::snprintf(buf, sizeof buf, "%.2f %s", value, units[u]);
        if (u == last || std::strtod(buf, nullptr) < 1024.0) return buf;
    }
}

}  // namespace sixnd
