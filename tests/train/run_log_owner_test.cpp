// A fresh run replaces an earlier run's log only when that run wrote into the same --out (or the
// log lies inside this run's --out), or with --overwrite: `--log runs/a/run.jsonl --out runs/b`
// typed by mistake must not wipe runs/a's history. A resumed run appends whatever the log says.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/error.h"
#include "tests/util/test_util.h"
#include "train/run_log.h"

using namespace sixnd;

namespace {

const std::string kEarlierLog = R"({"type":"header","config":{"out":"OUT"}})" "\n" R"({"type":"step","step":0})" "\n";

// A log an earlier run into `out` wrote.
void write_earlier_log(const std::string& path, const std::string& out) {
    std::string text = kEarlierLog;
    text.replace(text.find("OUT"), 3, out);
    std::ofstream(path) << text;
}

std::string contents(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string open_error(const std::string& path, const RunLogOwner& owner) {
    try {
        RunLog log(path, owner);
    } catch (const Error& e) {
        return e.what();
    }
    return "accepted";
}

}  // namespace

TEST(RunLogOwner, AFreshRunRefusesTheLogOfARunIntoAnotherOut) {
    const test::TempDir d("sixnd-run-log-owner-");
    const std::string path = d.dir + "/a.jsonl";
    write_earlier_log(path, d.dir + "/a");
    const std::string before = contents(path);
    EXPECT_EQ(open_error(path, RunLogOwner{false, d.dir + "/b", false}),
              path + ": holds the log of a run into " + d.dir + "/a, which a fresh run into " + d.dir +
                  "/b would replace: give this run its own --log, or pass --overwrite to replace it");
    EXPECT_EQ(contents(path), before);
}

TEST(RunLogOwner, AFreshRunReplacesTheLogOfItsOwnOutHoweverSpelt) {
    const test::TempDir d("sixnd-run-log-owner-");
    std::filesystem::create_directories(d.dir + "/a");
    const std::string path = d.dir + "/a.jsonl";
    write_earlier_log(path, d.dir + "/a");
    { RunLog log(path, RunLogOwner{false, d.dir + "/./a/", false}); }
    EXPECT_EQ(contents(path), "");
}

TEST(RunLogOwner, AFreshRunReplacesALogInsideItsOut) {
    const test::TempDir d("sixnd-run-log-owner-");
    std::filesystem::create_directories(d.dir + "/b");
    const std::string path = d.dir + "/b/run.jsonl";
    write_earlier_log(path, "a relative out written from another directory");
    { RunLog log(path, RunLogOwner{false, d.dir + "/b", false}); }
    EXPECT_EQ(contents(path), "");
}

TEST(RunLogOwner, OverwriteReplacesAnotherRunsLog) {
    const test::TempDir d("sixnd-run-log-owner-");
    const std::string path = d.dir + "/a.jsonl";
    write_earlier_log(path, d.dir + "/a");
    { RunLog log(path, RunLogOwner{false, d.dir + "/b", true}); }
    EXPECT_EQ(contents(path), "");
}

TEST(RunLogOwner, AResumedRunAppends) {
    const test::TempDir d("sixnd-run-log-owner-");
    const std::string path = d.dir + "/a.jsonl";
    write_earlier_log(path, d.dir + "/a");
    const std::string before = contents(path);
    {
        RunLog log(path, RunLogOwner{true, d.dir + "/b", false});
        log.write({{"type", "header"}});
    }
    EXPECT_EQ(contents(path), before + "{\"type\":\"header\"}\n");
}
