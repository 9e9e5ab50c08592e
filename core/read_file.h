// Whole-file reads with errors that name the file and the reason.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace sixnd {

// Throws Error(path, ...) when the file cannot be opened or read, or is a directory or a device.
std::string read_whole_file(const std::string& path);

// Throws Error(path, "is <kind>, not a <what>") when path exists as anything but a regular file:
// a FIFO would wait for a writer, a device never end, a socket fails the open itself ("No such
// device or address"). A missing path is left to whoever opens it.
void require_regular_file(const std::string& path, const std::string& what = "regular file");

// The type of what path names (following links), not_found when nothing does. A path that cannot
// be looked at (a directory on the way without search permission) is Error(path, "cannot be
// looked at: ..."): std::filesystem's own exception would reach the user as "filesystem error:".
std::filesystem::file_type path_type(const std::string& path);
inline bool path_present(const std::string& path) { return path_type(path) != std::filesystem::file_type::not_found; }
// As path_type, of a link at path itself rather than what it names (an --out that may not be one).
std::filesystem::file_type link_type(const std::string& path);

// A regular file open for reads at any offset (pread), for reading a part of a large file
// without the rest; errors name the file (anything but a regular file is one, refused at once).
class FileReader {
public:
    explicit FileReader(std::string path);
    ~FileReader();
    FileReader(const FileReader&) = delete;
    FileReader& operator=(const FileReader&) = delete;

    uint64_t size() const { return size_; }  // when it was opened
    // Reads bytes at offset; returns how many there were (fewer only at the end of the file).
    size_t read(void* dst, uint64_t offset, size_t bytes) const;
    void read_exactly(void* dst, uint64_t offset, size_t bytes) const;  // else "ended early"

private:
    std::string path_;
    int fd_ = -1;
    uint64_t size_ = 0;
};

}  // namespace sixnd
