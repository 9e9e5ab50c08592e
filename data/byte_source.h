// The bytes of one input file: gzip data (known by its signature, whatever the file's name)
// decompressed, member after member, and any other file as it is.
//
// zlib's own reader (gzread) stops without a word at bytes that begin no further gzip member, so
// a multi-member file (pigz, bgzip, `cat a.gz b.gz`) whose second member is damaged lost
// everything after the first and read as whole. Here every byte of a gzip file must belong to a
// member, and what does not is an error naming the offset. zstd, xz and bzip2 data and Parquet
// files, which it cannot unpack, are named as such rather than read as binary text.
#pragma once
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace sixnd::data {

class ByteSource {
public:
    // Throws Error naming the path when it cannot be opened, or when it is named as gzip
    // (named_gzip) and holds other data: a renamed or half-downloaded file, better named than
    // read as text.
    ByteSource(const std::string& path, bool named_gzip);
    ~ByteSource();
    ByteSource(const ByteSource&) = delete;
    ByteSource& operator=(const ByteSource&) = delete;

    // Up to cap bytes into dst; 0 at the end of the file. Throws Error naming the path on a read
    // fault or corrupt, truncated or trailing gzip data.
    size_t read(char* dst, size_t cap);

private:
    size_t inflate_some(char* dst, size_t cap);
    void refill();
    [[noreturn]] void corrupt(const std::string& why) const;

    std::string path_;
    std::FILE* f_ = nullptr;
    bool gzip_ = false, in_member_ = false, raw_eof_ = false;
    z_stream zs_{};
    std::vector<unsigned char> in_;
    uint64_t raw_read_ = 0;  // compressed bytes read from the file so far
};

}  // namespace sixnd::data
