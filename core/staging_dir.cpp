#include "core/staging_dir.h"

#include <unistd.h>

#include "core/error.h"
#include "core/sibling_name.h"

namespace fs = std::filesystem;

namespace sixnd {

fs::path out_dir_path(const std::string& flag) {
    fs::path out = fs::path(flag).lexically_normal();
    if (out.filename().empty()) out = out.parent_path();
    if (out.empty() || out.filename() == "." || out.filename() == "..")
        throw Error("--out", "'" + flag + "' does not name a directory to create");
    return out;
}

StagingDir::StagingDir(const fs::path& out, const std::string& tag) : out_(out), path_(), tag_(tag) {
    path_ = sibling("tmp");
    cleanup_.arm(path_.string(), true);
    std::error_code ec;
    fs::remove_all(path_, ec);
    fs::create_directories(path_, ec);
    if (ec) throw Error("--out", out_.string() + ": cannot create the " + tag_ + " directory: " + ec.message());
}

StagingDir::~StagingDir() {
    std::error_code ec;
    if (!committed_) fs::remove_all(path_, ec);
}

fs::path StagingDir::sibling(const std::string& kind) const {
    return out_.parent_path() / sibling_name("." + out_.filename().string(), "." + tag_ + "-" + kind + "." + std::to_string(getpid()));
}

void StagingDir::commit() {
    std::error_code ec;
    const fs::path old = sibling("old");
    const bool replace = fs::exists(fs::symlink_status(out_));
    if (replace) {
        fs::rename(out_, old, ec);
        if (ec) throw Error(out_.string(), "cannot move the earlier " + tag_ + " aside: " + ec.message());
    }
    fs::rename(path_, out_, ec);
    if (ec) {
        std::error_code ignore;
        if (replace) fs::rename(old, out_, ignore);
        throw Error(out_.string(), "cannot rename the " + tag_ + " into place: " + ec.message());
    }
    committed_ = true;
    cleanup_.disarm();
    if (replace) fs::remove_all(old, ec);
}

}  // namespace sixnd
