// The directories a command makes on the way to an output (a run's --out, an export's staging
// directory), noted so that a command ending without its output leaves none of them behind.
#pragma once
#include <filesystem>
#include <system_error>
#include <vector>

namespace sixnd {

// Makes dir and each missing directory on the way, one at a time along the path as it is spelled:
// a lexically normal form drops a component that a later ".." steps out of ("new/../run" makes
// new too). Returns those this call made as absolute paths without "..", the deepest first. On
// failure, ec says why and what the call had made is removed again.
std::vector<std::filesystem::path> make_directories(const std::filesystem::path& dir, std::error_code& ec);

// Removes those of the directories make_directories made that are empty, the deepest first (what
// was written keeps its directory, and so its parents).
void remove_made_directories(const std::vector<std::filesystem::path>& made);

}  // namespace sixnd
