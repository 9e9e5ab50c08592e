// MappedFile::copy_out while another process changes the file: a truncation is an Error naming
// the file, both where the read would fault (SIGBUS past the new end's page) and where it would
// read zeros (the rest of the last page); one rewritten in place is an Error too; a file renamed
// over the mapped one changes nothing. A FIFO is refused at once, not after a writer comes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/mapped_file.h"
#include "tests/util/test_util.h"

using namespace sixnd;

namespace {

std::string write_pages(const std::string& path, size_t pages) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    std::string bytes(pages * page, '\0');
    for (size_t i = 0; i < bytes.size(); i++) bytes[i] = static_cast<char>('a' + i % 26);
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return bytes;
}

void expect_shrank(const MappedFile& m, size_t offset, size_t n, const std::string& path) {
    std::vector<char> out(n);
    try {
        m.copy_out(offset, n, out.data());
        FAIL() << "no error for a read at " << offset << " of a truncated file";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(path), std::string::npos) << what;
        EXPECT_NE(what.find("shrank from"), std::string::npos) << what;
    }
}

}  // namespace

TEST(MappedFile, CopiesWhatTheFileHolds) {
    const test::TempDir d("sixnd-mapped-");
    const std::string path = d.dir + "/f";
    const std::string bytes = write_pages(path, 2);
    MappedFile m(path, "test file");
    std::vector<char> out(300);
    m.copy_out(4000, out.size(), out.data());
    EXPECT_EQ(std::string(out.begin(), out.end()), bytes.substr(4000, 300));
}

TEST(MappedFile, ATruncationIsAnErrorWhereTheReadWouldFault) {
    const test::TempDir d("sixnd-mapped-");
    const std::string path = d.dir + "/f";
    write_pages(path, 3);
    MappedFile m(path, "test file");
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(page + 100)), 0);
    expect_shrank(m, 2 * page + 8, 64, path);  // past the new end's page: SIGBUS, caught
    expect_shrank(m, 2 * page + 8, 64, path);  // and again: the handler stays in place
}

TEST(MappedFile, ATruncationIsAnErrorWhereTheReadWouldSeeZeros) {
    const test::TempDir d("sixnd-mapped-");
    const std::string path = d.dir + "/f";
    write_pages(path, 2);
    MappedFile m(path, "test file");
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(page + 100)), 0);
    expect_shrank(m, page + 200, 64, path);  // inside the last page, past the end: zeros
    expect_shrank(m, 0, 64, path);           // the file is not what was mapped any more
}

TEST(MappedFile, AFileRenamedOverTheMappedOneChangesNothing) {
    const test::TempDir d("sixnd-mapped-");
    const std::string path = d.dir + "/f";
    const std::string bytes = write_pages(path, 2);
    MappedFile m(path, "test file");
    std::ofstream(d.dir + "/g") << "short";
    ASSERT_EQ(std::rename((d.dir + "/g").c_str(), path.c_str()), 0);
    std::vector<char> out(100);
    m.copy_out(5000, out.size(), out.data());
    EXPECT_EQ(std::string(out.begin(), out.end()), bytes.substr(5000, 100));
}

// Rewritten in place at the same size (cp over it): the new bytes show through the map, so the
// read is an Error, not tokens of neither file. Touched to a given time: no clock granularity.
TEST(MappedFile, AFileRewrittenInPlaceIsAnError) {
    const test::TempDir d("sixnd-mapped-");
    const std::string path = d.dir + "/f";
    write_pages(path, 2);
    MappedFile m(path, "test file");
    std::vector<char> out(100);
    m.copy_out(0, out.size(), out.data());
    {
        std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
        f.write("XYZ", 3);
    }
    const struct timespec later[2] = {{0, UTIME_OMIT}, {1234567890, 5}};
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), later, 0), 0);
    try {
        m.copy_out(0, out.size(), out.data());
        FAIL() << "no error for a read of a file rewritten in place";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(path + ": the test file changed while it was being read"), std::string::npos) << what;
    }
}

TEST(MappedFile, AFifoIsRefusedWithoutWaitingForAWriter) {
    const test::TempDir d("sixnd-mapped-");
    const std::string path = d.dir + "/fifo";
    ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
    const int status = test::in_child([&] {
        ::alarm(10);  // a wait for a writer ends the child by SIGALRM instead of hanging the test
        try {
            MappedFile m(path, "token shard");
        } catch (const Error& e) {
            const std::string what = e.what();
            ::_exit(what.find(path) != std::string::npos && what.find("a FIFO") != std::string::npos ? 0 : 2);
        }
        ::_exit(3);
    });
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}
