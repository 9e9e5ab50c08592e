// A scope object that installs its own signal handlers for its lifetime (a run's StopSignals,
// ablate's ForwardSignals) must not, by being in place when a file is first armed for signal
// cleanup in the process, leave the cleanup's handlers uninstalled afterwards. Header-only: the
// handler types live in different rooms' libraries. (Under ctest each case is its own process,
// so no earlier case has installed the cleanup's handlers already.)
#pragma once
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>

#include "core/signal_cleanup.h"
#include "tests/util/test_util.h"

namespace sixnd::test {

// In a child: a file is first armed while a Handlers(args...) lives; after it, `file` is armed and
// created and SIGTERM raised. Returns the child's wait status: killed by SIGTERM, with `file`
// gone, when the cleanup watched it.
template <class Handlers, class... Args>
int sigterm_after_first_arm_under(const std::filesystem::path& file, Args... args) {
    return in_child([&] {
        {
            const Handlers handlers(args...);
            SignalCleanup during;
            if (!during.arm(file.string() + ".during", false)) ::_exit(2);
        }
        SignalCleanup after;
        if (!after.arm(file.string(), false)) ::_exit(2);
        std::FILE* f = std::fopen(file.c_str(), "w");
        if (!f) ::_exit(3);
        std::fclose(f);
        ::raise(SIGTERM);
        ::_exit(4);
    });
}

}  // namespace sixnd::test
