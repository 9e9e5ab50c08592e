#include "core/staging_dir.h"

#include <sys/stat.h>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/made_dirs.h"

namespace fs = std::filesystem;

namespace sixnd {

namespace {

// The first entry of dir that is not a regular file, or "": a staging directory and an earlier
// output are flat, so anything else was not made by the verb.
std::string not_flat(const std::string& dir) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_symlink(ec) || !it->is_regular_file(ec)) return it->path().filename().string();
    return ec ? "(unreadable: " + ec.message() + ")" : "";
}

}  // namespace

fs::path out_dir_path(const std::string& flag) {
    fs::path out = fs::path(flag).lexically_normal();
    if (out.filename().empty()) out = out.parent_path();
    if (out.empty() || out.filename() == "." || out.filename() == "..")
        throw Error("--out", "'" + flag + "' does not name a directory to create");
    return out;
}

void refuse_non_directory_out(const fs::path& out, const std::string& writer) {
    struct stat st {};
    const char* kind = ::lstat(out.c_str(), &st) == 0 ? file_kind(st.st_mode) : "not a directory";
    throw Error(out.string(), std::string("exists and is ") + kind + ", not a directory " + writer +
                                  " wrote; refusing to replace it");
}

StagingDir::StagingDir(const fs::path& out, const std::string& tag)
    : siblings_{out, ".", "." + tag + "-tmp.", "." + tag + "-old."}, path_(siblings_.staging()), tag_(tag) {
    restore_aside(siblings_);
    remove_stale_siblings(siblings_, not_flat);
    // Armed first: a signal between creating the directory and arming would leave it behind.
    cleanup_.arm(path_.string(), true);
    std::error_code ec;
    fs::remove_all(path_, ec);
    made_ = make_directories(path_, ec);
    if (ec) throw Error("--out", out.string() + ": cannot create the " + tag_ + " directory: " + ec.message());
}

// Uncommitted, the directories made for OUT's parent go too: a failed export into new/dir/out
// leaves no empty new/dir behind.
StagingDir::~StagingDir() {
    if (committed_) return;
    std::error_code ec;
    fs::remove_all(path_, ec);
    remove_made_directories(made_);
}

void StagingDir::commit() {
    replace_dir(siblings_, tag_);
    committed_ = true;
    cleanup_.disarm();
}

}  // namespace sixnd
