// Which run a run directory's checkpoints belong to, and what a run told that they are another
// run's is advised to do. With two runs' checkpoints in one --out (one copied in beside the
// other's), `--resume latest` resumed the newest, whichever run's, and was then refused for the
// other run's checkpoints with the advice to "continue that run with --resume latest": the very
// command that failed. Now both runs are named and the way out is to move one of them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "tests/util/checkpoint_stub.h"
#include "tests/util/test_util.h"
#include "train/run_dir.h"

using namespace sixnd;

namespace {

const std::string kOurs = "0123456789abcdef", kTheirs = "fedcba9876543210";

std::string claim_fault(const std::string& root, const std::string& run_id) {
    try {
        claim_checkpoints(root, run_id, false);
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(RunDirClaim, TwoRunsInOneDirectoryAreNamedBoth) {
    test::TempDir t("sixnd_claim_");
    const std::string root = t.dir + "/checkpoints";
    test::save_stub_checkpoint(root, 4, kOurs);
    test::save_stub_checkpoint(root, 6, kTheirs);
    // --resume latest took step 6, the other run's: this run is now kTheirs.
    const std::string fault = claim_fault(root, kTheirs);
    EXPECT_NE(fault.find("holds the checkpoints of 2 runs (run " + kOurs + ": step-00000004; run " + kTheirs +
                         " (this one): step-00000006)"),
              std::string::npos)
        << fault;
    EXPECT_EQ(fault.find("continue that run with --resume latest"), std::string::npos) << fault;
    EXPECT_EQ(claim_checkpoints(root, kTheirs, true), std::vector<std::string>{root + "/step-00000004"});
}

TEST(RunDirClaim, AFreshRunIsToldToContinueTheOneRunThere) {
    test::TempDir t("sixnd_claim_");
    const std::string root = t.dir + "/checkpoints";
    test::save_stub_checkpoint(root, 2, kOurs);
    test::save_stub_checkpoint(root, 4, kOurs);
    const std::string fault = claim_fault(root, kTheirs);
    EXPECT_NE(fault.find("holds 2 checkpoint(s) of another run (step-00000002 .. step-00000004); continue that run with "
                         "--resume latest"),
              std::string::npos)
        << fault;
    EXPECT_EQ(claim_fault(root, kOurs), "");
}
