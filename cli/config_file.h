// `--config FILE` for any verb that has the flag: the file holds the verb's flags as
// `key = value` lines (TOML/INI style; '#' or ';' comment lines, and a '#' after a blank ends a
// line; values optionally in quotes; a flag without a value takes true/false, on/off, yes/no or
// 1/0). Keys are the flag names without "--", with '-' or '_'. Keys before any section, and in
// a `[VERB]` section, apply; sections named for another verb are skipped; anything else — an
// unknown key, an unknown section, a malformed line, a key given twice — is an error naming
// FILE:LINE. Flags on the command line win over the file (`sixnd ablate` varies a knob over a
// base config that way).
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "core/error.h"

namespace sixnd::cli {

struct ConfigArg {
    std::string where;  // FILE:LINE
    std::string flag;   // --name
    std::vector<std::string> args;
};

// The command-line arguments the config file named in `args` (argv without the verb) stands
// for, in file order; empty when there is no --config. `verb` is the section that applies.
std::vector<ConfigArg> config_file_args(CLI::App& app, const std::string& verb, const std::vector<std::string>& args);

// The error's message, led by the config file's FILE:LINE when its `where` is a flag (or flags
// joined by '/') that config_file_args took from the file: checks run after parsing name only
// the flag. Any other error's message as it is (a flag the command line gave names no line).
std::string with_config_line(const Error& e);

}  // namespace sixnd::cli
