// sixnd report's --out: new, empty, or an earlier report's (it holds report_input.json, which only
// sixnd report writes), so that a directory of the user's, a run's or a data set's is never
// written into. The report is drawn in a staging directory beside --out and swapped in whole: a
// failed or interrupted report leaves the earlier one, or nothing, as it was.
#pragma once
#include <string>

#include "core/staging_dir.h"

namespace sixnd {

class ReportDir {
public:
    static constexpr const char* kInput = "report_input.json";  // the drawing script's input, and the mark of a report

    // Refuses (Error naming --out and what it holds) any other directory, then creates the
    // staging directory.
    explicit ReportDir(const std::string& out);

    std::string out() const { return staging_.out().string(); }
    std::string staging() const { return staging_.path().string(); }
    // Puts the staging directory in place of --out. An earlier report holding a file this one
    // does not write (something added to it since) is refused, as it would be lost.
    void commit();

private:
    StagingDir staging_;
};

}  // namespace sixnd
