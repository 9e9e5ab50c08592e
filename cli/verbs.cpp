#include "cli/verbs.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "cli/config_file.h"
#include "core/error.h"
#include "core/read_file.h"

namespace sixnd::cli {

namespace {

// Whether CLI11's message `what` is about `flag` itself, not a longer flag it begins
// (--mlp in "--mlp-hidden: ...").
bool names_flag(const std::string& what, const std::string& flag) {
    for (size_t at = what.find(flag); at != std::string::npos; at = what.find(flag, at + 1)) {
        const size_t end = at + flag.size();
        if (end == what.size() || !(std::isalnum(static_cast<unsigned char>(what[end])) || what[end] == '-' || what[end] == '_'))
            return true;
    }
    return false;
}

// What is wrong with a number flag's value that CLI11 accepted, or "". It reads an empty value
// as 0 ("grad-clip =" in a config file would turn clipping off), integers as C's strtoll with
// base 0 does ("--stop-at 00000500", a step copied from a checkpoint's name, would be 320
// (octal), and 0x10 16), reals as strtold does (0x1p-3 is 0.125), and either past leading
// blanks, which would let " 010" through as octal.
std::string number_fault(const std::string& value, bool integer) {
    if (value.empty()) return "needs a number, and its value is empty";
    if (std::isspace(static_cast<unsigned char>(value[0])))
        return "takes a number without blanks around it, got '" + excerpt(value) + "'";
    const size_t i = value[0] == '-' || value[0] == '+' ? 1 : 0;
    if (value.size() < i + 2 || value[i] != '0') return "";
    if (!integer) return value[i + 1] == 'x' || value[i + 1] == 'X' ? "takes a decimal number, got '" + excerpt(value) + "'" : "";
    if (std::isdigit(static_cast<unsigned char>(value[i + 1]))) {
        const size_t digits = value.find_first_not_of('0', i);
        return "takes a decimal number without leading zeros, got '" + excerpt(value) + "' (write " +
               value.substr(0, i) + (digits == std::string::npos ? "0" : value.substr(digits)) + ")";
    }
    if (std::isalpha(static_cast<unsigned char>(value[i + 1])))
        return "takes a decimal number, got '" + excerpt(value) + "'";
    return "";
}

// number_fault for every number flag given, subcommands' too, named at its config-file line
// when the file gave it.
// An on/off flag given twice: CLI11 keeps the last ("--check --check=false" ran for real), where
// an option given twice is refused.
void check_flags_once(const CLI::App& app) {
    for (const CLI::Option* opt : app.get_options())
        if (opt->get_expected_min() == 0 && opt != app.get_help_ptr() && opt->count() > 1)
            throw Error(opt->get_name(), "is given " + std::to_string(opt->count()) + " times; give it once");
    for (const CLI::App* sub : app.get_subcommands()) check_flags_once(*sub);
}

void check_number_values(const CLI::App& app, const std::vector<ConfigArg>& config) {
    for (const CLI::Option* opt : app.get_options()) {
        const NumberKind kind = number_kind(*opt);
        if (kind == NumberKind::none || opt->count() == 0) continue;
        for (const std::string& value : opt->results()) {
            const std::string fault = number_fault(value, kind == NumberKind::integer);
            if (fault.empty()) continue;
            std::string where = opt->get_name();
            for (const ConfigArg& c : config)
                if (c.flag == opt->get_name() && std::find(c.args.begin(), c.args.end(), value) != c.args.end()) where = c.where;
            throw Error(where, (where == opt->get_name() ? "" : opt->get_name() + " ") + fault);
        }
    }
    for (const CLI::App* sub : app.get_subcommands()) check_number_values(*sub, config);
}

// Edits (insert, delete, replace, swap two neighbours) from a to b: the usual typos.
size_t typo_distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); i++) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); j++) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); i++)
        for (size_t j = 1; j <= b.size(); j++) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

// " (did you mean --X?)" for the first unknown flag among CLI11's leftovers that is a typo of
// one of the flags of app or its subcommand, else "".
std::string flag_suggestion(const CLI::App& app, const std::vector<std::string>& extras) {
    std::vector<std::string> flags;
    for (const CLI::Option* opt : app.get_options())
        if (opt->get_name().rfind("--", 0) == 0) flags.push_back(opt->get_name());
    for (const CLI::App* sub : app.get_subcommands())
        for (const CLI::Option* opt : sub->get_options())
            if (opt->get_name().rfind("--", 0) == 0) flags.push_back(opt->get_name());
    for (const std::string& x : extras) {
        if (x.rfind("--", 0) != 0) continue;
        const std::string near = closest_name(x.substr(0, x.find('=')), flags);
        if (!near.empty()) return " (did you mean " + near + "?)";
    }
    return "";
}

}  // namespace

std::string closest_name(const std::string& given, const std::vector<std::string>& names) {
    const size_t skip = given.rfind("--", 0) == 0 ? 2 : 0;  // "--" is never the typo
    const size_t most = std::max<size_t>(1, std::min<size_t>(2, (given.size() - skip) / 3));
    std::string best;
    size_t best_distance = most + 1;
    for (const std::string& name : names) {
        const size_t distance = typo_distance(given, name);
        if (distance > 0 && distance < best_distance) {
            best = name;
            best_distance = distance;
        }
    }
    return best;
}

NumberKind number_kind(const CLI::Option& opt) {
    const std::string type = opt.get_type_name();
    if (type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0) return NumberKind::integer;
    return type.rfind("FLOAT", 0) == 0 ? NumberKind::real : NumberKind::none;
}

bool parse_flags(CLI::App& app, int argc, char** argv, ConfigFile config_file) {
    const std::string verb = argv[0];
    const std::vector<CLI::Option*> options = app.get_options();
    const bool positionals = std::any_of(options.begin(), options.end(), [](const CLI::Option* o) { return o->get_positional(); });
    // A verb with subcommands has the flags of the one named first (check_subcommand saw to it).
    const CLI::App* sub = nullptr;
    for (const CLI::App* s : app.get_subcommands({}))
        if (argc > 1 && s->get_name() == argv[1]) sub = s;
    auto flag_named = [&](const std::string& name) {
        const CLI::Option* opt = app.get_option_no_throw(name);
        return opt || !sub ? opt : sub->get_option_no_throw(name);
    };
    std::vector<std::string> args;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        // CLI11 drops what follows a "--" where nothing is positional: `sixnd ablate ... -- --train-data
        // x` said "--train-data is required".
        if (a == "--" && !positionals)
            throw Error("--", "not a flag: this command takes flags only, and drops those after a '--'; leave it out");
        // CLI11 takes "--log=" for "--log" with its value still to come, and so swallows the next
        // argument ("--log= --check" would log to a file named --check, and run): an empty value.
        // A flag's "--overwrite=" it takes as "--overwrite": "--overwrite=$UNSET" would delete.
        const size_t eq = a.find('=');
        const CLI::Option* opt = a.rfind("--", 0) == 0 && eq == a.size() - 1 ? flag_named(a.substr(0, eq)) : nullptr;
        if (opt && opt->get_expected_min() == 0)
            throw Error(opt->get_name(), "is given an empty value ('" + a + "'); give " + opt->get_name() + " alone, or leave it out");
        if (opt) {
            args.push_back(a.substr(0, eq));
            args.emplace_back();
        } else {
            args.push_back(a);
        }
    }
    const std::vector<ConfigArg> config =
        config_file == ConfigFile::own ? config_file_args(app, verb, args) : std::vector<ConfigArg>{};
    std::vector<std::string> all;
    for (const ConfigArg& c : config) all.insert(all.end(), c.args.begin(), c.args.end());
    all.insert(all.end(), args.begin(), args.end());
    std::reverse(all.begin(), all.end());  // CLI11 takes the arguments last first
    try {
        app.parse(all);
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) {
            // Written here, not by CLI11 into std::cout: the help is longer than stdout's buffer, so
            // a full disk fails a write inside CLI11, and by the final flush the reason is gone.
            std::ostringstream help;
            app.exit(e, help);
            const std::string text = help.str();
            errno = 0;
            if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
                throw Error("stdout", std::string("write failed") + (errno ? std::string(": ") + std::strerror(errno) : ""));
            return false;
        }
        std::string what = e.what();
        // CLI11's words for a flag given twice.
        const std::string twice = "At Most 1 required but received ";
        if (const size_t at = what.find(twice); at != std::string::npos)
            what = what.substr(0, at) + "is given " + what.substr(at + twice.size()) + " times; give it once";
        // CLI11 checks for missing flags before unknown ones: `--trian-data x` was "--train-data is
        // required", the typo unmentioned. (A verb that takes extras, ablate, passes them on.)
        const std::vector<std::string> extras = app.remaining(true);
        bool unknown = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr;
        if (!unknown && !app.get_allow_extras() && dynamic_cast<const CLI::RequiredError*>(&e) && !extras.empty()) {
            what = CLI::ExtrasError(extras).what();
            unknown = true;
        }
        // Not part of `what` while a config file's line is looked for: it names a flag the file may give.
        std::string suggestion;
        if (unknown) {
            // An unquoted glob for a flag that takes one pattern arrives as several file names; the
            // ones after the first are "not expected".
            if (std::any_of(extras.begin(), extras.end(), [](const std::string& x) { return path_present(x); }))
                what += " (an existing file: a glob the shell expanded into several names? quote it, e.g. 'data/*.bin')";
            suggestion = flag_suggestion(app, extras);
        }
        // A bad value from the config file: name its line.
        for (const ConfigArg& c : config)
            if (names_flag(what, c.flag)) throw Error(c.where, what + suggestion);
        throw Error("", what + suggestion);
    }
    check_flags_once(app);
    check_number_values(app, config);
    return true;
}

void refuse_empty_values(const CLI::App& app, const std::vector<std::string>& may_be_empty) {
    for (const CLI::Option* opt : app.get_options()) {
        if (std::find(may_be_empty.begin(), may_be_empty.end(), opt->get_name()) != may_be_empty.end()) continue;
        for (const std::string& value : opt->results())
            SIXND_CHECK(!value.empty() || opt->get_expected_min() == 0, opt->get_name(),
                        opt->get_required() ? "is empty; give it a value" : "is empty; give it a value or leave it out");
    }
    for (const CLI::App* sub : app.get_subcommands()) refuse_empty_values(*sub, may_be_empty);
}

void check_subcommand(CLI::App& app, int argc, char** argv) {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
        names += (names.empty() ? "" : ", ") + sub->get_name();
        known = known || (argc > 1 && sub->get_name() == argv[1]);
    }
    if (argc < 2) throw Error("", "a subcommand is required: " + names);
    if (!known && argv[1][0] != '-') throw Error("", std::string("unknown subcommand '") + argv[1] + "' (" + names + ")");
}

const std::vector<Verb>& verbs() {
    static const std::vector<Verb> table = {
        {"train", "train a GPT (one process, or many under mpirun)", run_train},
        {"sample", "generate text from a checkpoint", run_sample},
        {"eval", "loss of a model on a shard set", run_eval},
        {"data", "raw text -> filtered, deduplicated token shards", run_data},
        {"tokenizer", "byte-level BPE: train, encode, decode, import-gpt2, export-hf, info", run_tokenizer},
        {"plan", "size a run (budget -> model, tokens, memory, time, $); --check RUN.jsonl", run_plan},
        {"replay", "the data x state ablation of a loss spike (PaLM's experiment) -> verdict", run_replay},
        {"ablate", "one knob, several values, several seeds -> results table with p-values", run_ablate},
        {"report", "plots (matplotlib) + report.md/html from runs or an ablation", run_report},
        {"export", "checkpoint -> Hugging Face directory (safetensors + config + tokenizer)", run_export},
    };
    return table;
}

}  // namespace sixnd::cli
