// Work in progress that must not outlive an interrupted process: AtomicFile's temporary file,
// `data prepare`'s partial directory. While armed, a path is removed if the process is ended by
// SIGINT, SIGTERM or SIGHUP; the handler then restores the default action and re-raises the
// signal, so the exit status still says how the process ended.
//
// Handlers are installed only for signals whose disposition is still the default: a verb that
// handles these signals itself (a graceful stop) keeps its own handler and its own cleanup.
// A directory must be flat (files only): the handler clears it with async-signal-safe calls.
// Arm a path before creating it: between creating and arming, a signal would leave it behind
// (a path not there yet costs the handler nothing).
#pragma once
#include <string>

namespace sixnd {

// Installs the handlers (once per process; the first arm() does it otherwise). A SignalBlock
// calls it before it holds signals back: a path armed for the first time inside a block, which
// would find the block's handler and not the default, is still removed by a signal raised when
// the block ends.
void install_signal_cleanup();

class SignalCleanup {
public:
    SignalCleanup() = default;
    ~SignalCleanup() { disarm(); }
    SignalCleanup(const SignalCleanup&) = delete;
    SignalCleanup& operator=(const SignalCleanup&) = delete;

    // Starts watching path (a file, or a flat directory); false when every slot is taken, in
    // which case the path is simply not removed on a signal.
    bool arm(const std::string& path, bool flat_dir);
    void disarm();

private:
    int slot_ = -1;
};

}  // namespace sixnd
