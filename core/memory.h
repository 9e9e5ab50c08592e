// Device-neutral memory: the Backend memory interface and the ledger that records every byte
// it hands out by category, so that the trainer can report what each knob (dtype, master
// weights, recompute, ZeRO stage) costs. CPU and CUDA implement MemoryBackend; nothing above
// core/ allocates model memory any other way.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace sixnd {

// weight_copies: packed bf16 panels of the weights the CPU matmul keeps where the CPU has no
// BF16 dot products (model/cpu/weight_copies.h); zero elsewhere.
enum class MemCategory { params, grads, master, adam_m, adam_v, activations, workspace, weight_copies, count };
constexpr int kMemCategories = static_cast<int>(MemCategory::count);
const char* mem_category_name(MemCategory c);

class MemoryLedger {
public:
    void add(MemCategory c, size_t bytes);
    void sub(MemCategory c, size_t bytes);
    size_t current(MemCategory c) const;
    size_t peak(MemCategory c) const;
    size_t current_total() const;
    size_t peak_total() const;  // peak of the sum, not the sum of peaks
    void reset_peaks();
    // The peaks as they stand, and back to them later (no lower than what is held then): for
    // memory that is not the run's, such as a start-up measurement's buffers.
    struct Peaks {
        std::array<size_t, kMemCategories> by_category{};
        size_t total = 0;
    };
    Peaks peaks() const;
    void restore_peaks(const Peaks& p);

private:
    mutable std::mutex mu_;
    std::array<size_t, kMemCategories> cur_{};
    std::array<size_t, kMemCategories> peak_{};
    size_t cur_total_ = 0;
    size_t peak_total_ = 0;
};

class MemoryBackend {
public:
    virtual ~MemoryBackend() = default;
    virtual const char* name() const = 0;
    virtual bool is_host() const = 0;  // true when device pointers can be read by the CPU

    void* allocate(size_t bytes, MemCategory c);
    void release(void* p);  // null is allowed
    // Whether [p, p + bytes) lies inside one live allocation of category c.
    bool holds(const void* p, size_t bytes, MemCategory c);

    virtual void copy_to_device(void* dst, const void* src_host, size_t bytes) = 0;
    virtual void copy_to_host(void* dst_host, const void* src, size_t bytes) = 0;
    virtual void copy(void* dst, const void* src, size_t bytes) = 0;
    virtual void memset(void* dst, int value, size_t bytes) = 0;
    virtual void sync() = 0;

    MemoryLedger& ledger() { return ledger_; }
    const MemoryLedger& ledger() const { return ledger_; }

protected:
    virtual void* raw_allocate(size_t bytes) = 0;
    virtual void raw_free(void* p) = 0;

private:
    struct Alloc {
        size_t bytes;
        MemCategory category;
    };
    MemoryLedger ledger_;
    std::mutex mu_;
    std::map<uintptr_t, Alloc> allocs_;  // by address, so that holds() finds the allocation around a pointer
};

// Host memory, 64-byte aligned (cache lines, AVX-512 loads).
class HostMemory final : public MemoryBackend {
public:
    ~HostMemory() override;
    const char* name() const override { return "cpu"; }
    bool is_host() const override { return true; }
    void copy_to_device(void* dst, const void* src, size_t bytes) override;
    void copy_to_host(void* dst, const void* src, size_t bytes) override;
    void copy(void* dst, const void* src, size_t bytes) override;
    void memset(void* dst, int value, size_t bytes) override;
    void sync() override {}

protected:
    void* raw_allocate(size_t bytes) override;
    void raw_free(void* p) override;
};

// A typed buffer owned through a MemoryBackend; freed (and un-ledgered) on destruction.
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    DeviceBuffer(MemoryBackend* mem, size_t bytes, MemCategory c)
        : mem_(mem), bytes_(bytes), ptr_(bytes ? mem->allocate(bytes, c) : nullptr) {}
    ~DeviceBuffer() { reset(); }
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;
    DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
    DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
        if (this != &o) {
            reset();
            mem_ = o.mem_;
            bytes_ = o.bytes_;
            ptr_ = o.ptr_;
            o.ptr_ = nullptr;
            o.bytes_ = 0;
        }
        return *this;
    }
    void reset() {
        if (ptr_) mem_->release(ptr_);
        ptr_ = nullptr;
        bytes_ = 0;
    }
    void* get() const { return ptr_; }
    template <typename T> T* as() const { return static_cast<T*>(ptr_); }
    size_t bytes() const { return bytes_; }
    explicit operator bool() const { return ptr_ != nullptr; }

private:
    MemoryBackend* mem_ = nullptr;
    size_t bytes_ = 0;
    void* ptr_ = nullptr;
};

std::string format_bytes(size_t bytes);

}  // namespace sixnd
