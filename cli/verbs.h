// The verb table. Each verb lives in cli/<verb>.cpp and parses its own flags with CLI11.
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace sixnd::cli {

struct Verb {
    const char* name;
    const char* summary;
    int (*run)(int argc, char** argv);  // argv[0] is the verb
};

const std::vector<Verb>& verbs();

// Parses a verb's flags: true to go on, false when --help was printed (the verb returns 0).
// A parse error (unknown flag, bad value) is thrown as one Error line, exit status 1, like
// every other bad input. A verb's `--config FILE` holds its own flags and is read here, unless
// the verb only hands the file on to another verb (ConfigFile::pass_on: `sixnd ablate` passes
// its base train configuration to every `sixnd train` it starts).
enum class ConfigFile { own, pass_on };
bool parse_flags(CLI::App& app, int argc, char** argv, ConfigFile config_file = ConfigFile::own);

// After parse_flags, for a verb none of whose flags takes an empty value (a script's unset
// variable): one given empty is an Error naming the flag. A path would otherwise be opened as "",
// an error that names no file, and some values read as the flag left out. (`sample --prompt ""`
// is a prompt, so this is not parse_flags' own rule: such flags are named in may_be_empty.)
// Subcommands' flags included.
void refuse_empty_values(const CLI::App& app, const std::vector<std::string>& may_be_empty = {});

// Whether a flag takes a number, read from the type CLI11 gives it: an integer, a real, or not
// a number (a text flag stays text, whatever it spells).
enum class NumberKind { none, integer, real };
NumberKind number_kind(const CLI::Option& opt);

// The one of `names` that `given` is a typo of (a letter or two off, two letters swapped), or "".
std::string closest_name(const std::string& given, const std::vector<std::string>& names);

// For a verb with subcommands, before parse_flags: a missing or misspelt subcommand is an Error
// naming the ones there are (CLI11 would say only "a subcommand is required").
void check_subcommand(CLI::App& app, int argc, char** argv);

// Prints e as the verb's one error line ("sixnd VERB: error: ..."), led by the FILE:LINE of the
// config-file value it is about, if any.
void print_error(const char* verb, const std::exception& e);

// Thrown once the error is printed (under mpirun: before the ranks leave MPI together, since
// mpirun ends the job at the first rank that exits non-zero and a slower rank's line, often rank
// 0's, the one that says why, would be lost): main prints nothing more.
struct ErrorPrinted {};

int run_eval(int argc, char** argv);
int run_train(int argc, char** argv);
int run_sample(int argc, char** argv);
int run_tokenizer(int argc, char** argv);
int run_data(int argc, char** argv);
int run_plan(int argc, char** argv);
int run_ablate(int argc, char** argv);
int run_report(int argc, char** argv);
int run_export(int argc, char** argv);
int run_replay(int argc, char** argv);

}  // namespace sixnd::cli
