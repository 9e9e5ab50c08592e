#include "core/signal_cleanup.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace sixnd {

namespace {

constexpr int kSlots = 64;
enum : int { kFree, kFilling, kArmed };

struct Slot {
    std::atomic<int> state{kFree};
    bool dir = false;
    char path[4096];
};
Slot g_slots[kSlots];
std::once_flag g_installed;

struct Dirent64 {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[1];
};

// Only syscalls from here to on_signal's end: nothing that allocates or locks.
void clear_flat_dir(const char* path) {
    int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    alignas(8) char buf[8192];
    // Several sweeps: other threads may add entries while the first runs.
    for (int sweep = 0; sweep < 4; sweep++) {
        ::lseek(fd, 0, SEEK_SET);
        bool removed = false;
        long n;
        while ((n = ::syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
            for (long off = 0; off < n;) {
                const auto* d = reinterpret_cast<const Dirent64*>(buf + off);
                const char* name = buf + off + offsetof(Dirent64, name);  // runs past name[1]: a pointer, not an index
                bool dot = name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0));
                if (!dot && ::unlinkat(fd, name, 0) == 0) removed = true;
                off += d->reclen;
            }
        }
        if (!removed) break;
    }
    ::close(fd);
    ::rmdir(path);
}

void on_signal(int sig) {
    for (Slot& s : g_slots) {
        if (s.state.load() != kArmed) continue;
        if (s.dir)
            clear_flat_dir(s.path);
        else
            ::unlink(s.path);
    }
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

void install_handlers() {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        struct sigaction old {};
        if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;
        struct sigaction sa {};
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        ::sigaction(sig, &sa, nullptr);
    }
}

}  // namespace

void install_signal_cleanup() { std::call_once(g_installed, install_handlers); }

bool SignalCleanup::arm(const std::string& path, bool flat_dir) {
    disarm();
    if (path.size() >= sizeof(Slot::path)) return false;
    install_signal_cleanup();
    for (int i = 0; i < kSlots; i++) {
        int expect = kFree;
        if (!g_slots[i].state.compare_exchange_strong(expect, kFilling)) continue;
        std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
        g_slots[i].dir = flat_dir;
        g_slots[i].state.store(kArmed);
        slot_ = i;
        return true;
    }
    return false;
}

void SignalCleanup::disarm() {
    if (slot_ < 0) return;
    g_slots[slot_].state.store(kFree);
    slot_ = -1;
}

}  // namespace sixnd
