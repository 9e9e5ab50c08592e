// Starting another program and waiting for it (fork + execvp), for verbs that drive other
// processes: `sixnd ablate` its training runs, `sixnd report` the plotting script.
#pragma once
#include <string>
#include <vector>

namespace sixnd {

// Runs argv[0] (searched on PATH) and returns its exit status, 128 + N when killed by signal
// N, or 127 when it could not be started. With `output` set, the child's stdout and stderr are
// appended to that file; otherwise it shares this process's. The child gets SIGTERM when this
// process dies, so killing the parent never leaves an orphan writing on.
int run_process(const std::vector<std::string>& argv, const std::string& output = "");

}  // namespace sixnd
