#include "train/report_dir.h"

#include "core/error.h"
#include "core/read_file.h"

namespace sixnd {

namespace fs = std::filesystem;

namespace {

fs::path checked_out(const std::string& flag) {
    const fs::path out = out_dir_path(flag);
    // A fault looking (no search permission above it, a name too long) names this --out, not the
    // library's "filesystem error: symlink_status".
    const fs::file_type type = link_type(out.string());
    if (type == fs::file_type::not_found) return out;
    if (type != fs::file_type::directory) refuse_non_directory_out(out, "sixnd report");
    if (link_type((out / ReportDir::kInput).string()) != fs::file_type::not_found) return out;
    std::error_code ec;
    fs::directory_iterator entries(out, ec);
    if (ec) throw Error(out.string(), "cannot be looked at: " + ec.message());
    for (const auto& e : entries)
        throw Error(out.string(), "exists and holds '" + e.path().filename().string() + "', and no " + ReportDir::kInput +
                                      ": it is not an earlier report; give a new or empty directory");
    return out;
}

}  // namespace

ReportDir::ReportDir(const std::string& flag) : staging_(checked_out(flag), "report") {}

void ReportDir::commit() {
    if (fs::exists(fs::symlink_status(staging_.out())))
        for (const auto& e : fs::directory_iterator(staging_.out())) {
            const std::string name = e.path().filename().string();
            if (!e.is_symlink() && e.is_regular_file() && fs::exists(fs::symlink_status(staging_.path() / name))) continue;
            throw Error(out(), "holds '" + name + "', which no report writes: move it away, or give another --out");
        }
    staging_.commit();
}

}  // namespace sixnd
