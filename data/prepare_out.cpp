#include "data/prepare_out.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/digits.h"
#include "core/dir_swap.h"
#include "core/error.h"
#include "core/read_file.h"

namespace sixnd::data {

namespace fs = std::filesystem;

namespace {

// train_000000.bin, val_000123.bin: the shard names data/output.cpp gives (six digits or more).
bool is_shard_name(const std::string& name) {
    for (const char* split : {"train_", "val_"}) {
        size_t n = std::strlen(split);
        if (name.size() >= n + 6 + 4 && name.compare(0, n, split) == 0 && all_digits(std::string_view(name).substr(n, name.size() - n - 4)) &&
            name.compare(name.size() - 4, 4, ".bin") == 0)
            return true;
    }
    return false;
}

// What a run puts in its partial directory: the finished names plus scratch and temporary files.
bool is_partial_entry(const std::string& name) {
    return name == "manifest.json" || name == "signatures.tmp" || name == "tokens.tmp" || is_shard_name(name) ||
           name.find(".tmp.") != std::string::npos;
}

// The first entry of dir that is not a regular file accepted by `allowed`, or "" when none.
template <class Allowed>
std::string foreign_entry(const std::string& dir, Allowed allowed) {
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::string name = it->path().filename().string();
        if (!allowed(name) || !it->is_regular_file(ec) || it->is_symlink(ec)) return name;
    }
    if (ec) return "(unreadable: " + ec.message() + ")";
    return "";
}

bool strictly_inside(const fs::path& inner, const fs::path& outer) {
    auto i = inner.begin(), o = outer.begin();
    for (; o != outer.end(); ++o, ++i)
        if (i == inner.end() || *i != *o) return false;
    return i != inner.end();
}

// OUT.partial-PID and OUT.old-PID (core/dir_swap.h).
OutSiblings siblings(const std::string& out) { return {out, "", ".partial-", ".old-"}; }

}  // namespace

bool is_data_output_dir(const std::string& dir) {
    std::string manifest = dir + "/manifest.json";
    struct stat st;
    if (::stat(manifest.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (64 << 20)) return false;
    try {
        auto j = nlohmann::json::parse(read_whole_file(manifest), nullptr, false);
        return j.is_object() && j.value("format", "") == "sixnd data manifest";
    } catch (const Error&) {
        return false;
    }
}

void check_output_dir(const std::string& out, bool overwrite) {
    if (out.empty()) throw Error("--out", "no output directory given");
    struct stat st;
    if (::lstat(out.c_str(), &st) != 0) {
        if (errno != ENOENT) throw Error("--out", out + ": " + std::strerror(errno));
        try {
            sixnd::check_output_dir(out);  // the directory it is to be made in is there
        } catch (const Error& e) {
            throw Error("--out", e.what());
        }
        return;
    }
    if (!S_ISDIR(st.st_mode))
        throw Error("--out", out + " exists and is " + file_kind(st.st_mode) +
                                 ", not a directory sixnd data prepare wrote; refusing to replace it");
    std::error_code ec;
    if (fs::is_empty(out, ec)) return;  // made for the output (mkdir -p first): nothing in it to lose
    if (!overwrite) throw Error("--out", out + " already exists (pass --overwrite to replace it)");
    if (!is_data_output_dir(out))
        throw Error("--out", out + " holds no sixnd data manifest, so it is not an earlier output; --overwrite "
                                   "replaces only those (remove it yourself if it should go)");
    std::string odd = foreign_entry(out, [](const std::string& n) { return n == "manifest.json" || is_shard_name(n); });
    if (!odd.empty())
        throw Error("--out", out + " holds '" + odd + "', which sixnd data prepare does not write; refusing to delete it "
                                   "with --overwrite (move it away first)");
}

void check_no_overlap(const std::string& out, const std::vector<NamedPath>& inputs) {
    std::error_code ec;
    fs::path o = fs::weakly_canonical(fs::absolute(out, ec), ec);
    if (ec) return;
    for (const auto& in : inputs) {
        fs::path p = fs::weakly_canonical(fs::absolute(in.path, ec), ec);
        if (ec) continue;
        const char* how = p == o ? "is" : strictly_inside(p, o) ? "contains" : strictly_inside(o, p) ? "is inside" : nullptr;
        if (how)
            throw Error("--out", out + " " + how + " " + in.what + " " + in.path +
                                     "; the output must lie outside everything the run reads");
    }
}

void restore_moved_aside(const std::string& out) { restore_aside(siblings(out)); }

void remove_stale_partials(const std::string& out) {
    remove_stale_siblings(siblings(out), [](const std::string& dir) { return foreign_entry(dir, is_partial_entry); });
}

PartialDir::PartialDir(const std::string& out) : path_(siblings(out).staging().string()) {
    std::error_code ec;
    fs::remove_all(path_, ec);  // named by this process's id: only a dead earlier process can have left it
    // Armed first: a signal between creating the directory and arming would leave it behind.
    cleanup_.arm(path_, true);
    if (!fs::create_directory(path_, ec)) throw Error("--out", "cannot create " + path_ + ": " + ec.message());
}

PartialDir::~PartialDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);  // still armed: a signal meanwhile finishes the job
    cleanup_.disarm();
}

void PartialDir::commit(const std::string& out, bool overwrite) {
    check_output_dir(out, overwrite);  // again: the run took a while
    replace_dir(siblings(out), "output");
    cleanup_.disarm();
    path_.clear();
}

}  // namespace sixnd::data
