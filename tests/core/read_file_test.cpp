// Whole-file reads (core/read_file.h): a file's bytes, zero bytes included; a pipe read to its
// writer's end; a missing file, a directory, a device (which has no end to read to) and a socket
// each an error naming the path; FileReader refuses a FIFO at once, not after waiting for a writer.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/error.h"
#include "core/mapped_file.h"
#include "core/read_file.h"
#include "tests/util/test_util.h"

using namespace sixnd;
namespace fs = std::filesystem;

namespace {

std::string error_of(const std::string& path) {
    try {
        read_whole_file(path);
    } catch (const Error& e) {
        return e.where() + ": " + e.fault();
    }
    return "";
}

}  // namespace

TEST(ReadWholeFile, ReadsEveryByte) {
    const test::TempDir t("sixnd_read_file_");
    const fs::path d = t.dir;
    const std::string bytes = std::string("a\0b\xff\n", 5) + std::string(200000, 'x');
    std::ofstream(d / "f", std::ios::binary) << bytes;
    EXPECT_EQ(read_whole_file((d / "f").string()), bytes);
}

TEST(ReadWholeFile, ReadsAPipeToItsEnd) {
    const test::TempDir t("sixnd_read_file_");
    const fs::path d = t.dir;
    const std::string fifo = (d / "fifo").string();
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    std::thread writer([&] { std::ofstream(fifo) << "lr = 1\n"; });
    EXPECT_EQ(read_whole_file(fifo), "lr = 1\n");
    writer.join();
}

TEST(ReadWholeFile, NamesWhatIsNotAFile) {
    const test::TempDir t("sixnd_read_file_");
    const fs::path d = t.dir;
    EXPECT_EQ(error_of((d / "absent").string()), (d / "absent").string() + ": cannot open: No such file or directory");
    EXPECT_EQ(error_of(d.string()), d.string() + ": is a directory, not a file");
    EXPECT_EQ(error_of("/dev/zero"), "/dev/zero: is a device, not a file");
    EXPECT_EQ(error_of("/dev/null"), "/dev/null: is a device, not a file");
}

// A socket (a daemon's, a leftover of one) cannot be opened at all: each reader's message says
// what it is, not the "No such device or address" of the open (MappedFile's too, checked here
// with the others).
TEST(ReadWholeFile, NamesASocket) {
    const test::TempDir t("sixnd_read_file_");
    const std::string path = (fs::path(t.dir) / "sock").string();
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    ASSERT_LT(path.size(), sizeof addr.sun_path);
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(error_of(path), path + ": is a socket, not a file");
    try {
        FileReader f(path);
        ADD_FAILURE() << "a socket was opened";
    } catch (const Error& e) {
        EXPECT_EQ(e.fault(), "is a socket, not a regular file");
    }
    try {
        MappedFile f(path, "token shard");
        ADD_FAILURE() << "a socket was mapped";
    } catch (const Error& e) {
        EXPECT_EQ(e.fault(), "is a socket, not a token shard");
    }
    ::close(fd);
}

TEST(FileReader, RefusesAFifoWithoutWaitingForAWriter) {
    const test::TempDir t("sixnd_read_file_");
    const std::string path = (fs::path(t.dir) / "fifo").string();
    ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
    const int status = test::in_child([&] {
        ::alarm(10);  // a wait for a writer ends the child by SIGALRM instead of hanging the test
        try {
            FileReader f(path);
        } catch (const Error& e) {
            ::_exit(e.where() == path && e.fault() == "is a FIFO, not a regular file" ? 0 : 2);
        }
        ::_exit(3);
    });
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(FileReader, RefusesADirectory) {
    const test::TempDir t("sixnd_read_file_");
    try {
        FileReader f(t.dir);
        ADD_FAILURE() << "a directory was opened";
    } catch (const Error& e) {
        EXPECT_EQ(e.fault(), "is a directory, not a regular file");
    }
}
