// A run killed inside remove_checkpoint (a --keep-last prune, the last one of a run included)
// leaves the checkpoint renamed `.step-N.deleting`; the next run on the directory finishes the
// deletion. Before, it stayed, holding a whole checkpoint's bytes, until step N was deleted
// again, which a run going forward never does. Entries that are not such leftovers stay.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/util/test_util.h"
#include "train/checkpoint.h"

using namespace sixnd;
namespace fs = std::filesystem;

namespace {

void make_dir_with_file(const fs::path& dir) {
    fs::create_directories(dir);
    std::ofstream(dir / "params.bin") << "weights";
}

}  // namespace

TEST(CheckpointRemoval, AKilledDeletionIsFinished) {
    test::TempDir t("sixnd_ckremoval_");
    const fs::path root = t.dir + "/checkpoints";
    make_dir_with_file(root / ".step-00000004.deleting");
    make_dir_with_file(root / ".step-100000000.deleting");
    make_dir_with_file(root / "step-00000006");
    finish_interrupted_removals(root.string());
    EXPECT_FALSE(fs::exists(root / ".step-00000004.deleting"));
    EXPECT_FALSE(fs::exists(root / ".step-100000000.deleting"));
    EXPECT_TRUE(fs::exists(root / "step-00000006" / "params.bin"));
}

TEST(CheckpointRemoval, OtherHiddenEntriesStay) {
    test::TempDir t("sixnd_ckremoval_");
    const fs::path root = t.dir + "/checkpoints";
    for (const char* name : {".step-4.deleting", ".notes.deleting", ".step-00000004.tmp", ".step-00000004.old.12"})
        make_dir_with_file(root / name);
    finish_interrupted_removals(root.string());
    for (const char* name : {".step-4.deleting", ".notes.deleting", ".step-00000004.tmp", ".step-00000004.old.12"})
        EXPECT_TRUE(fs::exists(root / name / "params.bin")) << name;
}

TEST(CheckpointRemoval, NoCheckpointDirectoryIsNothingToDo) {
    test::TempDir t("sixnd_ckremoval_");
    EXPECT_NO_THROW(finish_interrupted_removals(t.dir + "/checkpoints"));
}
