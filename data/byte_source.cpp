#include "data/byte_source.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "core/error.h"

namespace sixnd::data {

namespace fs = std::filesystem;

namespace {

// The fault of a file starting with `start` when it holds compressed or columnar data that this
// reader cannot unpack, or nullptr. Read as text, such a file was removed as "binary" without a
// word, and the run went on without the documents in it (The Pile's .jsonl.zst, a Hugging Face
// dataset's .parquet).
const char* unread_container(std::string_view start) {
    const bool bzip2 = start.size() == 10 && start.rfind("BZh", 0) == 0 && start[3] >= '1' && start[3] <= '9' &&
                       start.substr(4) == "1AY&SY";
    if (bzip2) return "is bzip2 data, which data prepare does not read: decompress it first (bzip2 -d)";
    if (start.rfind(std::string_view("\x28\xB5\x2F\xFD", 4), 0) == 0)
        return "is zstd data, which data prepare does not read: decompress it first (zstd -d)";
    if (start.rfind(std::string_view("\xFD" "7zXZ\0", 6), 0) == 0)
        return "is xz data, which data prepare does not read: decompress it first (xz -d)";
    if (start.rfind("PAR1", 0) == 0) return "is a Parquet file, which data prepare does not read: convert it to JSON Lines first";
    return nullptr;
}

}  // namespace

ByteSource::ByteSource(const std::string& path, bool named_gzip) : path_(path), in_(1 << 17) {
    errno = 0;
    f_ = std::fopen(path.c_str(), "rb");
    if (!f_) {
        const int err = errno;
        std::error_code ec;
        if (err == ENOENT && fs::is_symlink(fs::symlink_status(path, ec)))
            throw Error(path, "is a symbolic link to " + fs::read_symlink(path, ec).string() + ", which does not exist");
        throw Error(path, std::string("cannot open: ") + (err ? std::strerror(err) : "out of memory"));
    }
    char head[10] = {};
    const std::string_view start(head, std::fread(head, 1, sizeof head, f_));
    std::rewind(f_);
    gzip_ = start.rfind("\x1f\x8b", 0) == 0;
    const char* fault = named_gzip && !gzip_ && !start.empty()
                            ? "is named .gz but is not gzip data (no gzip signature 1f 8b at the start)"
                            : unread_container(start);
    if (fault) {
        std::fclose(f_);
        throw Error(path, fault);
    }
    if (gzip_ && inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) {
        std::fclose(f_);
        throw Error(path, "cannot start gzip decompression: out of memory");
    }
}

ByteSource::~ByteSource() {
    if (gzip_) inflateEnd(&zs_);
    std::fclose(f_);
}

void ByteSource::corrupt(const std::string& why) const { throw Error(path_, "corrupt or truncated gzip data: " + why); }

// Keeps the unread input and appends more from the file behind it.
void ByteSource::refill() {
    const size_t keep = zs_.avail_in;
    if (keep > 0) std::memmove(in_.data(), zs_.next_in, keep);
    const size_t n = std::fread(in_.data() + keep, 1, in_.size() - keep, f_);
    if (n == 0) {
        if (std::ferror(f_)) throw Error(path_, std::string("read failed: ") + std::strerror(errno));
        raw_eof_ = true;
    }
    raw_read_ += n;
    zs_.next_in = in_.data();
    zs_.avail_in = static_cast<uInt>(keep + n);
}

size_t ByteSource::inflate_some(char* dst, size_t cap) {
    for (;;) {
        // Two bytes at hand, so that a member's signature can be checked whole.
        if (zs_.avail_in < 2 && !raw_eof_) {
            refill();
            continue;
        }
        if (!in_member_) {
            if (zs_.avail_in == 0) return 0;  // the last member ended with the file
            if (zs_.avail_in < 2 || zs_.next_in[0] != 0x1f || zs_.next_in[1] != 0x8b) {
                struct stat st;
                const uint64_t at = raw_read_ - zs_.avail_in;
                const uint64_t size = ::fstat(fileno(f_), &st) == 0 ? static_cast<uint64_t>(st.st_size) : raw_read_;
                throw Error(path_, "corrupt gzip data: the " + std::to_string(size - at) + " byte(s) from offset " +
                                       std::to_string(at) +
                                       " follow a complete gzip member but begin no other (a damaged member, or bytes "
                                       "appended to the file)");
            }
            inflateReset(&zs_);
            in_member_ = true;
        }
        zs_.next_out = reinterpret_cast<Bytef*>(dst);
        zs_.avail_out = static_cast<uInt>(std::min<size_t>(cap, 1u << 30));  // uInt: 32 bits
        const uInt before = zs_.avail_out;
        const int r = inflate(&zs_, Z_NO_FLUSH);
        const size_t n = before - zs_.avail_out;
        if (r == Z_STREAM_END)
            in_member_ = false;
        else if (r == Z_DATA_ERROR || r == Z_NEED_DICT || r == Z_STREAM_ERROR)
            corrupt(zs_.msg ? zs_.msg : "invalid data");
        else if (r == Z_MEM_ERROR)
            throw Error(path_, "gzip decompression ran out of memory");
        if (n > 0) return n;
        if (in_member_ && zs_.avail_in == 0 && raw_eof_) corrupt("unexpected end of file");
    }
}

size_t ByteSource::read(char* dst, size_t cap) {
    if (cap == 0) return 0;
    if (gzip_) return inflate_some(dst, cap);
    const size_t n = std::fread(dst, 1, cap, f_);
    if (n == 0 && std::ferror(f_)) throw Error(path_, std::string("read failed: ") + std::strerror(errno));
    return n;
}

}  // namespace sixnd::data
