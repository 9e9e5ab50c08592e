#include "dist/rank_agreement.h"

#include <cstdint>

#include "core/error.h"

namespace sixnd {
double text_hash52(const std::string& s) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return static_cast<double>(h >> 12);
}

void check_ranks_agree(Comm& comm, const std::vector<std::pair<std::string, std::string>>& settings) {
    const int world = comm.size();
    if (world == 1) return;
    // The count first: ranks of different builds may list different settings, and gathering
    // records of unequal length would fail inside MPI rather than here.
    const std::vector<double> counts = comm.all_gather_host({static_cast<double>(settings.size())});
    for (int r = 1; r < world; r++)
        if (counts[r] != counts[0])
            throw AgreedError("mpirun", "rank " + std::to_string(r) + " runs another build of sixnd than rank 0 (" +
                                            std::to_string(static_cast<long>(counts[r])) + " settings against " +
                                            std::to_string(settings.size()) + "); every rank must run the same binary");
    std::vector<double> mine;
    for (const auto& s : settings) mine.push_back(text_hash52(s.second));
    const std::vector<double> all = comm.all_gather_host(mine);
    const size_t n = settings.size();
    std::string differ;
    for (int r = 1; r < world; r++) {
        std::string names;
        for (size_t k = 0; k < n; k++)
            if (all[r * n + k] != all[k]) names += (names.empty() ? "" : ", ") + settings[k].first;
        if (!names.empty()) differ += (differ.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + ": " + names;
    }
    if (!differ.empty())
        throw AgreedError("mpirun", "the ranks were started with different flags or data (those that differ from rank 0's: " +
                                        differ + "); every rank of a job must run the same command on the same data");
}

}  // namespace sixnd
