#include "cli/verbs.h"

#include <algorithm>
#include <cctype>

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
// as 0 ("grad-clip =" in a config file would turn clipping off), and integers as C's strtoll
// with base 0 does: "--stop-at 00000500", a step copied from a checkpoint's name, would be 320
// (octal), and 0x10 16.
std::string number_fault(const std::string& value, bool integer) {
    if (value.empty()) return "needs a number, and its value is empty";
    const size_t i = value[0] == '-' || value[0] == '+' ? 1 : 0;
    if (!integer || value.size() < i + 2 || value[i] != '0') return "";
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

}  // namespace

NumberKind number_kind(const CLI::Option& opt) {
    const std::string type = opt.get_type_name();
    if (type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0) return NumberKind::integer;
    return type.rfind("FLOAT", 0) == 0 ? NumberKind::real : NumberKind::none;
}

bool parse_flags(CLI::App& app, int argc, char** argv, ConfigFile config_file) {
    const std::string verb = argv[0];
    const std::vector<CLI::Option*> options = app.get_options();
    const bool positionals = std::any_of(options.begin(), options.end(), [](const CLI::Option* o) { return o->get_positional(); });
    std::vector<std::string> args;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        // CLI11 drops what follows a "--" where nothing is positional: `sixnd ablate ... -- --train-data
        // x` said "--train-data is required".
        if (a == "--" && !positionals)
            throw Error("--", "not a flag: this command takes flags only, and drops those after a '--'; leave it out");
        // CLI11 takes "--log=" for "--log" with its value still to come, and so swallows the next
        // argument ("--log= --check" would log to a file named --check, and run): an empty value.
        const size_t eq = a.find('=');
        const CLI::Option* opt = a.rfind("--", 0) == 0 && eq == a.size() - 1 ? app.get_option_no_throw(a.substr(0, eq)) : nullptr;
        if (opt && opt->get_expected_min() > 0) {
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
            app.exit(e);
            return false;
        }
        // A bad value from the config file: name its line.
        std::string what = e.what();
        // CLI11's words for a flag given twice.
        const std::string twice = "At Most 1 required but received ";
        if (const size_t at = what.find(twice); at != std::string::npos)
            what = what.substr(0, at) + "is given " + what.substr(at + twice.size()) + " times; give it once";
        // An unquoted glob for a flag that takes one pattern arrives as several file names; the
        // ones after the first are "not expected".
        if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
            const std::vector<std::string> extras = app.remaining();
            if (std::any_of(extras.begin(), extras.end(), [](const std::string& x) { return path_present(x); }))
                what += " (an existing file: a glob the shell expanded into several names? quote it, e.g. 'data/*.bin')";
        }
        for (const ConfigArg& c : config)
            if (names_flag(what, c.flag)) throw Error(c.where, what);
        throw Error("", what);
    }
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
