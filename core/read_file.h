// Whole-file reads with errors that name the file and the reason.
#pragma once
#include <string>

namespace sixnd {

// Throws Error(path, ...) when the file cannot be opened or read, or is a directory or a device.
std::string read_whole_file(const std::string& path);

// Throws Error(path, "is <kind>, not a regular file") when path exists as anything else: a FIFO
// would wait for a writer, a device never end. A missing path is left to whoever opens it.
void require_regular_file(const std::string& path);

}  // namespace sixnd
