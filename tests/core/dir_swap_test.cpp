// Replacing an output directory (core/dir_swap.h) and what StagingDir does with the siblings a
// killed run left: an aside whose OUT is missing is put back, dead runs' staging and aside
// directories go (also under names cut to fit NAME_MAX), and running processes' or foreign
// ones stay.
#include "core/dir_swap.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "core/sibling_name.h"
#include "core/staging_dir.h"
#include "tests/util/test_util.h"

namespace fs = std::filesystem;

namespace {

class DirSwapTest : public ::testing::Test {
protected:
    static void write(const fs::path& p, const std::string& text) {
        fs::create_directories(p.parent_path());
        std::ofstream(p) << text;
    }
    static std::string read(const fs::path& p) {
        std::ifstream f(p);
        return std::string(std::istreambuf_iterator<char>(f), {});
    }
    // The id of a process that has ended.
    static pid_t dead_pid() {
        const pid_t pid = ::fork();
        if (pid == 0) ::_exit(0);
        ::waitpid(pid, nullptr, 0);
        return pid;
    }
    static fs::path sibling(const sixnd::OutSiblings& s, const std::string& suffix, pid_t pid) {
        return s.out.parent_path() / sixnd::sibling_name(s.prefix + s.out.filename().string(), suffix + std::to_string(pid));
    }
    size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{})); }

    const sixnd::test::TempDir tmp_{"sixnd_dir_swap_"};
    const fs::path dir_{tmp_.dir};
};

std::string none(const std::string&) { return ""; }

TEST_F(DirSwapTest, ReplacesAnEarlierOutputAndLeavesNoSibling) {
    const sixnd::OutSiblings s{dir_ / "out", "", ".partial-", ".old-"};
    write(s.out / "a", "old");
    write(s.staging() / "b", "new");
    sixnd::replace_dir(s, "output");
    EXPECT_FALSE(fs::exists(s.out / "a"));
    EXPECT_EQ(read(s.out / "b"), "new");
    EXPECT_EQ(entries(), 1u);
}

TEST_F(DirSwapTest, PutsAnOutputWhereThereWasNone) {
    const sixnd::OutSiblings s{dir_ / "out", ".", ".export-tmp.", ".export-old."};
    write(s.staging() / "b", "new");
    sixnd::replace_dir(s, "export");
    EXPECT_EQ(read(s.out / "b"), "new");
    EXPECT_EQ(entries(), 1u);
}

TEST_F(DirSwapTest, PutsBackTheAsideOfAKilledRun) {
    const sixnd::OutSiblings s{dir_ / "out", "", ".partial-", ".old-"};
    write(sibling(s, ".old-", dead_pid()) / "a", "earlier");
    sixnd::restore_aside(s);
    EXPECT_EQ(read(s.out / "a"), "earlier");
    EXPECT_EQ(entries(), 1u);
}

TEST_F(DirSwapTest, LeavesRunningProcessesSiblingsAlone) {
    const sixnd::OutSiblings s{dir_ / "out", "", ".partial-", ".old-"};
    const fs::path aside = sibling(s, ".old-", ::getppid()), staging = sibling(s, ".partial-", ::getppid());
    write(aside / "a", "x");
    write(staging / "b", "x");
    sixnd::restore_aside(s);
    sixnd::remove_stale_siblings(s, none);
    EXPECT_TRUE(fs::exists(aside / "a"));
    EXPECT_TRUE(fs::exists(staging / "b"));
    EXPECT_FALSE(fs::exists(s.out));
}

TEST_F(DirSwapTest, RemovesDeadRunsSiblingsUnlessForeign) {
    const sixnd::OutSiblings s{dir_ / std::string(250, 'o'), ".", ".report-tmp.", ".report-old."};
    write(s.out / "kept", "x");
    const fs::path staging = sibling(s, ".report-tmp.", dead_pid()), aside = sibling(s, ".report-old.", dead_pid());
    const fs::path foreign = sibling(s, ".report-tmp.", dead_pid());
    ASSERT_LT(staging.filename().string().size(), 256u);
    ASSERT_LT(s.out.filename().string().size() + 1, staging.filename().string().size());  // cut to fit
    write(staging / "x", "x");
    write(aside / "y", "y");
    write(foreign / "keepme", "x");
    sixnd::remove_stale_siblings(s, [](const std::string& d) { return fs::exists(fs::path(d) / "keepme") ? "keepme" : ""; });
    EXPECT_FALSE(fs::exists(staging));
    EXPECT_FALSE(fs::exists(aside));
    EXPECT_TRUE(fs::exists(foreign / "keepme"));
    EXPECT_TRUE(fs::exists(s.out / "kept"));
}

// data prepare's siblings are plain "OUT.old-N": a user's backup named by a date or a counter
// past any pid ("data.old-20250101") has the shape, but no process had that number, so it is
// neither put back in OUT's place nor removed.
TEST_F(DirSwapTest, LeavesANumberNoProcessCanHaveAlone) {
    const sixnd::OutSiblings s{dir_ / "out", "", ".partial-", ".old-"};
    const fs::path backups[] = {dir_ / "out.old-20250101", dir_ / "out.old-4194305", dir_ / "out.partial-0123"};
    for (const fs::path& b : backups) write(b / "manifest.json", "a backup");
    sixnd::restore_aside(s);
    sixnd::remove_stale_siblings(s, none);
    for (const fs::path& b : backups) EXPECT_EQ(read(b / "manifest.json"), "a backup") << b;
    EXPECT_FALSE(fs::exists(s.out));
}

// export and report: a killed run's export-old is put back when OUT is missing, its export-tmp
// removed, when the next StagingDir of that OUT and tag is made.
TEST_F(DirSwapTest, StagingDirReclaimsAKilledRunsSiblings) {
    const fs::path out = dir_ / "ex";
    const sixnd::OutSiblings s{out, ".", ".export-tmp.", ".export-old."};
    const pid_t dead = dead_pid();
    write(sibling(s, ".export-old.", dead) / "config.json", "earlier");
    write(sibling(s, ".export-tmp.", dead) / "model.safetensors", "partial");
    write(sibling(s, ".report-tmp.", dead) / "other", "another verb's");
    {
        sixnd::StagingDir stage(out, "export");
        EXPECT_EQ(read(out / "config.json"), "earlier");
        EXPECT_FALSE(fs::exists(sibling(s, ".export-old.", dead)));
        EXPECT_FALSE(fs::exists(sibling(s, ".export-tmp.", dead)));
        EXPECT_TRUE(fs::exists(sibling(s, ".report-tmp.", dead) / "other"));
        write(stage.path() / "config.json", "new");
        stage.commit();
    }
    EXPECT_EQ(read(out / "config.json"), "new");
    EXPECT_EQ(entries(), 2u);  // ex and the report's sibling
}

// An export into new/dir/ex that fails (a full disk, a bad tensor) leaves no empty new/dir; one
// that is committed keeps them, and a parent that was there before always stays.
TEST_F(DirSwapTest, StagingDirNotCommittedTakesTheParentsItMade) {
    { const sixnd::StagingDir stage(dir_ / "new" / "dir" / "ex", "export"); }
    EXPECT_EQ(entries(), 0u);
    fs::create_directory(dir_ / "was");
    {
        sixnd::StagingDir stage(dir_ / "was" / "new" / ".." / "ex", "export");
        write(stage.path() / "config.json", "partial");
    }
    EXPECT_EQ(entries(), 1u);
    EXPECT_TRUE(fs::is_empty(dir_ / "was"));
    {
        sixnd::StagingDir stage(dir_ / "new" / "ex", "export");
        write(stage.path() / "config.json", "new");
        stage.commit();
    }
    EXPECT_EQ(read(dir_ / "new" / "ex" / "config.json"), "new");
}

}  // namespace
