// Output that appears whole or not at all: written under a temporary name beside the target
// (NAME.tmp.PID.N, cut to fit: core/sibling_name.h) and renamed over it on commit, so a crash or
// an error mid-write never leaves half a file (and SIGINT/SIGTERM/SIGHUP remove the temporary
// file, see core/signal_cleanup.h).
//
// Only a regular file is ever replaced. A path that exists as anything else — a symlink, a
// directory, a device node (/dev/null, a terminal), a FIFO or a socket — is refused, and so is
// an empty path: renaming over a symlink would drop the link and whatever it pointed at would
// silently not be updated, renaming over a device node would delete it. Every writer that uses
// AtomicFile (shards, manifests, tokenizer files, checkpoints, model files) inherits the rule.
// Standard output is not a path here: the verbs take "-" for it.
#pragma once
#include <cstdio>
#include <string>
#include <string_view>

#include "core/signal_cleanup.h"

namespace sixnd {

class AtomicFile {
public:
    explicit AtomicFile(std::string path);  // throws Error(path, ...) when it cannot be created
    ~AtomicFile();                          // removes the temporary file unless committed
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    void write(const void* data, size_t bytes);
    void write(std::string_view s) { write(s.data(), s.size()); }
    // Rewrites bytes at an offset (e.g. a header whose counts are known only at the end).
    void write_at(long offset, const void* data, size_t bytes);
    // Flushes and syncs the temporary file, so that a write error shows before anything is
    // renamed: for a writer that commits several files together.
    void sync();
    void commit();

private:
    std::string path_, temp_;
    FILE* f_ = nullptr;
    SignalCleanup cleanup_;  // the temporary file goes if the process is interrupted
};

void write_file_atomically(const std::string& path, std::string_view content);

// Makes the entry `path` durable in the directory that holds it (fsync of that directory): a
// rename is on disk only once its directory is synced, and a writer that then removes an older
// copy (a checkpoint kept by retention, an earlier output) must not let a power cut take both.
// AtomicFile::commit, replace_dir and a new checkpoint call it after their renames. File systems
// that cannot sync a directory (EINVAL) are passed over; an I/O error is Error(directory, ...).
void sync_parent_dir(const std::string& path);

// Throws Error(path, ...) unless path is non-empty and either absent or a regular file: the
// check AtomicFile makes, for callers that want to fail before long work.
void check_replaceable_file(const std::string& path);

// Throws Error(path, ...) when the directory path is to be created in does not exist or takes no
// new file (no write permission, a read-only file system): for callers that want to fail before
// long work rather than when AtomicFile creates the file.
void check_output_dir(const std::string& path);

// "a symbolic link", "a directory", "a character device", ... for a stat mode (for messages).
const char* file_kind(unsigned mode);

// Throws Error(out, ...) when out and input name the same existing file (by device and inode,
// so links and other spellings count): an output must never replace what the run reads.
void check_not_same_file(const std::string& out, const std::string& input, const std::string& input_flag);

// Throws Error(out, ...) when two outputs of one command would land on one file: the same
// existing file, or, before either exists, the same path once symbolic links and "." and ".."
// in it are resolved.
void check_not_same_output(const std::string& out, const std::string& other, const std::string& other_flag);

}  // namespace sixnd
