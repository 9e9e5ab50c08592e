// SIGINT and SIGTERM during training: the first asks the run to stop after the step in flight
// (the trainer then writes a checkpoint, says how to resume, and exits non-zero); a second one
// ends the process at once. The handlers are installed for the lifetime of a StopSignals and
// the previous ones restored after it.
#pragma once
#include <csignal>

namespace sixnd {

class StopSignals {
public:
    StopSignals();
    ~StopSignals();
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;

    // The signal that asked for a stop, or 0.
    static int received();

private:
    struct sigaction old_int_ {}, old_term_ {};
};

}  // namespace sixnd
