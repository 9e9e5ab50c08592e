// ProgressLine on a terminal redraws one line in place: what the terminal shows after each redraw
// must be that line alone, not the tail of a longer line drawn before it (an eval loss of 10.1234
// followed by 9.8765 must not read 9.87654). Checked through a pseudo-terminal, with the screen
// line replayed as a terminal draws it.
#include "core/progress_line.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

using namespace sixnd;

namespace {

// The lines a terminal shows for `out`: '\r' returns to the line's start, '\n' starts the next
// line, "ESC [ K" erases to the end of the line, other bytes overwrite the cell at the cursor;
// blanks at a line's end look like nothing and are dropped.
std::vector<std::string> screen(const std::string& out) {
    std::vector<std::string> lines(1);
    size_t col = 0;
    for (size_t i = 0; i < out.size(); i++) {
        std::string& line = lines.back();
        const char c = out[i];
        if (c == '\r') {
            col = 0;
        } else if (c == '\n') {
            lines.emplace_back();
            col = 0;
        } else if (c == '\x1b' && out.compare(i, 3, "\x1b[K") == 0) {
            line.resize(std::min(line.size(), col));
            i += 2;
        } else {
            if (col < line.size()) line[col] = c;
            else line.push_back(c);
            col++;
        }
    }
    for (std::string& line : lines) line.erase(line.find_last_not_of(' ') + 1);
    return lines;
}

// What ProgressLine(total) writes to a terminal for show(1, lines[0]), show(2, lines[1]), ...,
// followed by `after` (a message once it is gone).
std::string drawn_on_terminal(long long total, const std::vector<std::string>& lines, const std::string& after = "") {
    const int master = posix_openpt(O_RDWR | O_NOCTTY);
    EXPECT_GE(master, 0);
    EXPECT_EQ(grantpt(master), 0);
    EXPECT_EQ(unlockpt(master), 0);
    const int slave = ::open(ptsname(master), O_RDWR | O_NOCTTY);
    EXPECT_GE(slave, 0);
    std::fflush(stderr);
    const int saved = ::dup(2);
    ::dup2(slave, 2);
    {
        ProgressLine progress(total);
        for (size_t i = 0; i < lines.size(); i++) progress.show(static_cast<long long>(i) + 1, lines[i]);
    }
    std::fputs(after.c_str(), stderr);
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    ::close(slave);
    // The last show(), or `after`, ends a line: read up to that newline.
    std::string out;
    char buf[256];
    pollfd p{master, POLLIN, 0};
    while (out.find('\n') == std::string::npos && ::poll(&p, 1, 10000) == 1) {
        const ssize_t n = ::read(master, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    ::close(master);
    return out;
}

}  // namespace

TEST(ProgressLine, ShorterRedrawLeavesNoTailOfTheLongerOne) {
    const std::string out = drawn_on_terminal(3, {"eval 1/3  loss 10.1234", "eval 2/3  loss 9.8765", "eval 3/3  loss 9.5"});
    const std::vector<std::string> lines = screen(out);
    ASSERT_GE(lines.size(), 2u) << out;
    EXPECT_EQ(lines[0], "eval 3/3  loss 9.5");
}

// Work that stops short of its total (an error thrown mid-way) leaves no open line for the
// error message to be appended to.
TEST(ProgressLine, UnfinishedWorkEndsItsLine) {
    const std::vector<std::string> lines = screen(drawn_on_terminal(10, {"eval 1/10", "eval 2/10"}, "sixnd: error\n"));
    ASSERT_GE(lines.size(), 2u);
    EXPECT_EQ(lines[0], "eval 2/10");
    EXPECT_EQ(lines[1], "sixnd: error");
}

TEST(ProgressLine, ElsewhereWholeLinesAboutTwentyOverTheWork) {
    std::FILE* log = std::tmpfile();
    ASSERT_NE(log, nullptr);
    std::fflush(stderr);
    const int saved = ::dup(2);
    ::dup2(fileno(log), 2);
    {
        ProgressLine progress(40);
        for (long long done = 1; done <= 40; done++) progress.show(done, "step " + std::to_string(done));
        std::fflush(stderr);
    }
    ::dup2(saved, 2);
    ::close(saved);
    std::rewind(log);
    std::string out;
    for (int c; (c = std::fgetc(log)) != EOF;) out.push_back(static_cast<char>(c));
    std::fclose(log);
    std::string expected;
    for (int done = 2; done <= 40; done += 2) expected += "step " + std::to_string(done) + "\n";
    EXPECT_EQ(out, "step 1\n" + expected);
}
