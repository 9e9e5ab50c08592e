// Starting another program and waiting for it (fork + execvp), for verbs that drive other
// processes: `sixnd ablate` its training runs, `sixnd report` the plotting script.
#pragma once
#include <csignal>
#include <string>
#include <vector>

namespace sixnd {

// Runs argv[0] (searched on PATH) and returns its exit status, 128 + N when killed by signal
// N, or 127 when it could not be started. With `output` set, the child's stdout and stderr are
// appended to that file (126, said on stderr, when it cannot be opened); otherwise it shares this
// process's. The child gets SIGTERM when this process dies, so killing the parent never leaves an
// orphan writing on.
int run_process(const std::vector<std::string>& argv, const std::string& output = "");

// For a parent whose children stop gracefully on a signal (`sixnd train` writes a checkpoint at
// the first SIGINT, SIGTERM or SIGHUP and exits at once on a second): while one of these lives,
// those signals do not end this process; each is passed on, once, to the child run_process is
// waiting for, and the first is kept for the caller to stop starting others. The children run
// in a process group of their own (stdin /dev/null, as a background group may not read the
// terminal), so that a terminal's Ctrl-C, sent to the foreground group, reaches them only this
// way: a signal sent to both would be their second. A signal ignored at construction
// (`nohup`) stays ignored. One at a time, from the thread that calls run_process.
class ForwardSignals {
public:
    // pass_as: the signal each is passed on as (0: itself). A child that is a launcher such as
    // mpirun, which kills its processes a second after passing SIGINT or SIGTERM on, is sent
    // one it passes on as it is (SIGUSR1, a stop for `sixnd train`).
    explicit ForwardSignals(int pass_as = 0);
    ~ForwardSignals();
    ForwardSignals(const ForwardSignals&) = delete;
    ForwardSignals& operator=(const ForwardSignals&) = delete;

    // The first signal that came, or 0.
    static int received();

private:
    struct sigaction old_[3] {};  // SIGINT, SIGTERM, SIGHUP
};

}  // namespace sixnd
