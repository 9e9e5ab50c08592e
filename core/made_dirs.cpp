#include "core/made_dirs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace fs = std::filesystem;

namespace sixnd {

std::vector<fs::path> make_directories(const fs::path& dir, std::error_code& ec) {
    ec.clear();
    std::vector<fs::path> made;
    fs::path prefix;
    for (const fs::path& part : dir) {
        prefix /= part;
        if (part.empty() || part == "." || part == "..") continue;
        if (::mkdir(prefix.c_str(), 0777) == 0) {
            // Resolved as the kernel resolved it: "new/../run" no longer names run once new is gone.
            std::error_code resolve;
            const fs::path at = fs::canonical(prefix, resolve);
            made.insert(made.begin(), resolve ? fs::absolute(prefix) : at);
        } else if (errno != EEXIST) {
            ec.assign(errno, std::generic_category());
            remove_made_directories(made);
            return {};
        }
    }
    return made;
}

void remove_made_directories(const std::vector<fs::path>& made) {
    for (const fs::path& d : made) ::rmdir(d.c_str());
}

}  // namespace sixnd
