#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csetjmp>
#include <csignal>
#include <cstring>
#include <mutex>
#include <utility>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/read_file.h"

namespace sixnd {

namespace {

// Where a SIGBUS in this thread jumps back to (null outside copy_out), and the handler that was
// there before (the default, or a sanitizer's), for faults that are not copy_out's.
thread_local sigjmp_buf* t_on_bus = nullptr;
struct sigaction g_previous_bus {};
std::once_flag g_bus_installed;

void on_bus(int sig, siginfo_t* info, void* context) {
    if (sigjmp_buf* back = t_on_bus) siglongjmp(*back, 1);
    if (g_previous_bus.sa_flags & SA_SIGINFO) {
        g_previous_bus.sa_sigaction(sig, info, context);
        return;
    }
    // Returning re-runs the faulting access, which now meets the previous action.
    ::sigaction(SIGBUS, &g_previous_bus, nullptr);
}

void install_bus_handler() {
    struct sigaction sa {};
    sa.sa_sigaction = on_bus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, &g_previous_bus);
}

}  // namespace

MappedFile::MappedFile(const std::string& path, const std::string& what) : path_(path), what_(what) {
    // O_NONBLOCK: opening a FIFO would otherwise wait for a writer before it could be refused.
    int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st {};
    if (fd < 0) {
        const int err = errno;
        require_regular_file(path, what);  // a socket, which fails the open itself, named as what it is
        throw Error(path, "cannot open " + what + ": " + std::strerror(err));
    }
    if (::fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        throw Error(path, "cannot stat " + what + ": " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error(path, std::string("is ") + file_kind(st.st_mode) + ", not a " + what);
    }
    bytes_ = static_cast<size_t>(st.st_size);
    dev_ = static_cast<unsigned long>(st.st_dev);
    ino_ = static_cast<unsigned long>(st.st_ino);
    mtime_s_ = st.st_mtim.tv_sec;
    mtime_ns_ = st.st_mtim.tv_nsec;
    if (bytes_ > 0) {
        void* m = ::mmap(nullptr, bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            int err = errno;
            ::close(fd);
            throw Error(path, "cannot map " + what + ": " + std::strerror(err));
        }
        map_ = m;
    }
    ::close(fd);
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : path_(std::move(o.path_)),
      what_(std::move(o.what_)),
      map_(o.map_),
      bytes_(o.bytes_),
      dev_(o.dev_),
      ino_(o.ino_),
      mtime_s_(o.mtime_s_),
      mtime_ns_(o.mtime_ns_) {
    o.map_ = nullptr;
    o.bytes_ = 0;
}

MappedFile::~MappedFile() {
    if (map_) ::munmap(map_, bytes_);
}

void MappedFile::copy_out(size_t offset, size_t n, void* dst) const {
    if (n == 0) return;
    std::call_once(g_bus_installed, install_bus_handler);
    sigjmp_buf back;
    // Only the copy runs between here and a jump back: no object with a destructor is skipped.
    if (sigsetjmp(back, 1) != 0) {
        t_on_bus = nullptr;
        shrank();
    }
    // The fences keep the compiler from moving the stores across the copy (to it they are dead).
    t_on_bus = &back;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    std::memcpy(dst, data() + offset, n);
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_on_bus = nullptr;
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0 || static_cast<unsigned long>(st.st_dev) != dev_ ||
        static_cast<unsigned long>(st.st_ino) != ino_)
        return;  // removed or replaced by rename: the map still holds the file it was
    if (static_cast<size_t>(st.st_size) < bytes_) shrank();
    if (st.st_mtim.tv_sec != mtime_s_ || st.st_mtim.tv_nsec != mtime_ns_) changed();
}

void MappedFile::changed() const {
    throw Error(path_, "the " + what_ + " changed while it was being read (its modification time moved): it was "
                           "rewritten in place by another process, and must not change while sixnd reads it");
}

void MappedFile::shrank() const {
    struct stat st {};
    const std::string now = ::stat(path_.c_str(), &st) == 0 ? std::to_string(st.st_size) + " bytes" : "gone";
    throw Error(path_, "the " + what_ + " shrank from " + std::to_string(bytes_) + " bytes to " + now +
                           " while it was being read: it was truncated or rewritten in place by another process, "
                           "and must not change while sixnd reads it");
}

}  // namespace sixnd
