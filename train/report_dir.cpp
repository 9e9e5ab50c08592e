#include "train/report_dir.h"

#include "core/error.h"

namespace sixnd {

namespace fs = std::filesystem;

namespace {

fs::path checked_out(const std::string& flag) {
    const fs::path out = out_dir_path(flag);
    // A fault looking (no search permission above it, a name too long) is this --out's, said so,
    // not the library's "filesystem error: symlink_status".
    std::error_code ec;
    const auto unreachable = [&] { return Error(out.string(), "cannot look at this --out: " + ec.message()); };
    const fs::file_status st = fs::symlink_status(out, ec);
    if (ec && ec != std::errc::no_such_file_or_directory) throw unreachable();
    if (!fs::exists(st)) return out;
    if (!fs::is_directory(st)) refuse_non_directory_out(out, "sixnd report");
    const fs::file_status input = fs::symlink_status(out / ReportDir::kInput, ec);
    if (ec && ec != std::errc::no_such_file_or_directory) throw unreachable();
    if (fs::exists(input)) return out;
    fs::directory_iterator entries(out, ec);
    if (ec) throw unreachable();
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
