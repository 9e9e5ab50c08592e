#include "data/shard.h"

#include <glob.h>
#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "core/error.h"

namespace sixnd {

ShardHeader parse_shard_header(const unsigned char* bytes, size_t size, const std::string& where) {
    if (size < kShardHeaderInts * 4)
        throw Error(where, "not a token shard: " + std::to_string(size) + " bytes is shorter than the 1024-byte header");
    int32_t h[3];
    std::memcpy(h, bytes, sizeof h);
    ShardHeader r;
    if (h[0] == kShardMagicU16) {
        if (h[1] != kShardVersionU16)
            throw Error(where, "unsupported shard version " + std::to_string(h[1]) + " for magic 20240520 (expected 1)");
        r.token_bytes = 2;
    } else if (h[0] == kShardMagicU32) {
        if (h[1] != kShardVersionU32)
            throw Error(where, "unsupported shard version " + std::to_string(h[1]) + " for magic 20240801 (expected 7)");
        r.token_bytes = 4;
    } else {
        throw Error(where, "bad magic " + std::to_string(h[0]) + " (expected 20240520 or 20240801): not an llm.c token shard");
    }
    if (h[2] < 0) throw Error(where, "negative token count in header");
    r.tokens = static_cast<size_t>(h[2]);
    const size_t expect = kShardHeaderInts * 4 + r.tokens * r.token_bytes;
    if (expect != size)
        throw Error(where, "header says " + std::to_string(r.tokens) + " tokens (" + std::to_string(expect) +
                               " bytes) but there are " + std::to_string(size) + " bytes");
    return r;
}

Shard::Shard(const std::string& path) : map_(path, "token shard") {
    const ShardHeader h = parse_shard_header(map_.data(), map_.size(), path);
    token_bytes_ = h.token_bytes;
    ntok_ = h.tokens;
    tokens_ = map_.data() + kShardHeaderInts * 4;
}

void Shard::read(size_t begin, size_t count, int32_t* out) const {
    const size_t offset = kShardHeaderInts * 4 + begin * static_cast<size_t>(token_bytes_);
    if (token_bytes_ == 4) {
        map_.copy_out(offset, count * 4, out);  // token ids < 2^31 (the vocabulary's bound)
        return;
    }
    thread_local std::vector<uint16_t> narrow;
    narrow.resize(count);
    map_.copy_out(offset, count * 2, narrow.data());
    for (size_t k = 0; k < count; k++) out[k] = static_cast<int32_t>(narrow[k]);
}

// The full passes (the vocabulary check, the content hash) read through read() in chunks, as a
// batch does: a shard truncated between open and pass is then an Error naming it, not a SIGBUS.
void Shard::for_each_chunk(const std::function<void(const int32_t*, size_t)>& f) const {
    std::vector<int32_t> chunk(std::min<size_t>(ntok_, 1 << 16));
    for (size_t i = 0; i < ntok_; i += chunk.size()) {
        const size_t n = std::min(chunk.size(), ntok_ - i);
        read(i, n, chunk.data());
        f(chunk.data(), n);
    }
}

uint32_t Shard::max_token() const {
    if (max_token_ < 0) {
        uint32_t mx = 0;
        for_each_chunk([&](const int32_t* t, size_t n) {
            for (size_t k = 0; k < n; k++) mx = std::max(mx, static_cast<uint32_t>(t[k]));
        });
        max_token_ = mx;
    }
    return static_cast<uint32_t>(max_token_);
}

uint64_t Shard::tokens_hash() const {
    if (tokens_hash_) return *tokens_hash_;
    std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> st(XXH3_createState(), &XXH3_freeState);
    XXH3_64bits_reset(st.get());
    // int32 holds each token's uint32 bit pattern, which is what the hash is of.
    for_each_chunk([&](const int32_t* t, size_t n) { XXH3_64bits_update(st.get(), t, n * sizeof(int32_t)); });
    tokens_hash_ = XXH3_64bits_digest(st.get());
    return *tokens_hash_;
}

ShardFileWriter::ShardFileWriter(const std::string& path, size_t vocab_size)
    : path_(path), file_(path), vocab_size_(vocab_size), wide_(vocab_size > kShardU16Vocab) {
    int32_t header[kShardHeaderInts] = {};
    file_.write(header, sizeof header);
}

void ShardFileWriter::write(const uint32_t* tokens, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (tokens[i] >= vocab_size_)
            throw Error(path_, "token " + std::to_string(tokens[i]) + " is outside the vocabulary of " +
                                   std::to_string(vocab_size_));
    if (wide_) {
        file_.write(tokens, n * sizeof(uint32_t));
    } else {
        narrow_.assign(tokens, tokens + n);
        file_.write(narrow_.data(), n * sizeof(uint16_t));
    }
    count_ += n;
}

void ShardFileWriter::finish() {
    SIXND_CHECK(count_ <= INT32_MAX, path_, std::to_string(count_) + " tokens do not fit one llm.c shard (at most 2^31 - 1)");
    int32_t header[3] = {wide_ ? kShardMagicU32 : kShardMagicU16, wide_ ? kShardVersionU32 : kShardVersionU16,
                         static_cast<int32_t>(count_)};
    file_.write_at(0, header, sizeof header);
    file_.commit();
}

void write_shard(const std::string& path, const std::vector<uint32_t>& tokens, size_t vocab_size) {
    ShardFileWriter w(path, vocab_size);
    w.write(tokens);
    w.finish();
}

namespace {

// The first directory glob() could not list, for a reason other than its absence or its being a
// file (a link loop, no permission): glob() would skip it and match the rest, silently leaving
// out whatever shards it holds. glob() takes no context, so the report goes through this.
thread_local std::string t_unlisted;
thread_local int t_unlisted_errno = 0;

int on_unlisted(const char* dir, int err) {
    if (err == ENOENT || err == ENOTDIR) return 0;
    t_unlisted = dir;
    t_unlisted_errno = err;
    return 1;
}

}  // namespace

std::vector<std::string> expand_glob(const std::string& pattern) {
    glob_t g{};
    t_unlisted_errno = 0;
    int rc = ::glob(pattern.c_str(), 0, on_unlisted, &g);
    std::vector<std::string> out;
    if (rc == 0)
        for (size_t i = 0; i < g.gl_pathc; i++) out.emplace_back(g.gl_pathv[i]);
    globfree(&g);
    if (rc == GLOB_ABORTED && t_unlisted_errno != 0)
        throw Error(t_unlisted, "cannot list this directory to match " + pattern + ": " + std::strerror(t_unlisted_errno));
    if (out.empty()) {
        // A name holding glob characters ("run[1]/train.bin") matches no pattern, yet names a file.
        struct stat st;
        if (::lstat(pattern.c_str(), &st) == 0) return {pattern};
        const int err = errno;
        // glob() looks a name without glob characters up without telling errfunc why that failed:
        // a directory on its way in a link loop, or one the user may not search, is not "no files".
        if (err != ENOENT && err != ENOTDIR) throw Error(pattern, std::string("cannot look this path up: ") + std::strerror(err));
        throw Error(pattern, "no files match");
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace sixnd
