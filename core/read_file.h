// Whole-file reads with errors that name the file and the reason.
#pragma once
#include <string>

namespace sixnd {

// Throws Error(path, ...) when the file cannot be opened or read, or is a directory or a device.
std::string read_whole_file(const std::string& path);

}  // namespace sixnd
