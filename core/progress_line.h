// Progress of a counted piece of work on stderr: on a terminal, one line redrawn in place (ended
// when the work is done); elsewhere (a log file, nohup, a pipe), about 20 lines over the work, so
// that long work is not silent there either.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace sixnd {

class ProgressLine {
public:
    explicit ProgressLine(long long total) : total_(total), every_(std::max(1LL, total / 20)), tty_(isatty(fileno(stderr))) {}

    // Whether show(done, ...) prints now: callers build the text only then. `done` may grow by
    // any amount between calls (bytes written, say).
    bool due(long long done) const { return tty_ || done >= next_ || done == total_; }

    // `line` says where the work is after `done` of the total.
    void show(long long done, const std::string& line) {
        if (!due(done)) return;
        next_ = (done / every_ + 1) * every_;
        if (tty_) std::fprintf(stderr, "\r%s%s", line.c_str(), done == total_ ? "\n" : "");
        else std::fprintf(stderr, "%s\n", line.c_str());
    }

private:
    long long total_, every_, next_ = 0;
    bool tty_;
};

}  // namespace sixnd
