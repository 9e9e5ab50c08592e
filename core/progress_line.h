// Progress of a counted piece of work on stderr: on a terminal, one line redrawn in place (ended
// when the work is done, or given up); elsewhere (a log file, nohup, a pipe), about 20 lines over
// the work, so that long work is not silent there either.
#pragma once
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace sixnd {

class ProgressLine {
public:
    explicit ProgressLine(long long total) : total_(total), every_(std::max(1LL, total / 20)), tty_(isatty(fileno(stderr))) {}
    // Work left unfinished (an error, a stop) ends the line it drew: the message that follows
    // must not be appended to it.
    ~ProgressLine() {
        if (drawn_ > 0) std::fputc('\n', stderr);
    }
    ProgressLine(const ProgressLine&) = delete;
    ProgressLine& operator=(const ProgressLine&) = delete;

    // Whether show(done, ...) prints now: callers build the text only then. `done` may grow by
    // any amount between calls (bytes written, say).
    bool due(long long done) const { return tty_ || done >= next_ || done == total_; }

    // `line` says where the work is after `done` of the total.
    void show(long long done, const std::string& line) {
        if (!due(done)) return;
        next_ = (done / every_ + 1) * every_;
        if (tty_) {
            // A carriage return only moves the cursor: a line shorter than the one before it
            // would leave that one's tail on screen (loss 9.8765 after 10.1234 reading 9.87654),
            // so the rest is blanked with spaces, which every terminal understands.
            const int blank = static_cast<int>(std::max(drawn_, line.size()) - line.size());
            std::fprintf(stderr, "\r%s%*s%s", line.c_str(), blank, "", done == total_ ? "\n" : "");
            drawn_ = done == total_ ? 0 : line.size();
        } else {
            std::fprintf(stderr, "%s\n", line.c_str());
        }
    }

private:
    long long total_, every_, next_ = 0;
    bool tty_;
    size_t drawn_ = 0;  // the length of the unended line on screen (on a terminal)
};

}  // namespace sixnd
