#include "cli/config_file.h"

#include <map>
#include <set>
#include <sstream>

#include "cli/verbs.h"
#include "core/byte_order_mark.h"
#include "core/error.h"
#include "core/read_file.h"

namespace sixnd::cli {

namespace {

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// Where a comment starts in s, or npos: a '#' at its start or after a blank (space or tab).
size_t comment_start(const std::string& s) {
    for (size_t i = s.find('#'); i != std::string::npos; i = s.find('#', i + 1))
        if (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t') return i;
    return std::string::npos;
}

// The value without surrounding quotes, or with a trailing comment removed.
std::string unquote(const std::string& v, const std::string& where) {
    if (!v.empty() && (v[0] == '"' || v[0] == '\'')) {
        const size_t end = v.find(v[0], 1);
        if (end == std::string::npos) throw Error(where, "unterminated quoted value");
        if (!trim(v.substr(end + 1)).empty() && trim(v.substr(end + 1))[0] != '#')
            throw Error(where, "text after the quoted value");
        return v.substr(1, end - 1);
    }
    return trim(v.substr(0, comment_start(v)));
}

bool flag_value(const std::string& v, const std::string& where, const std::string& key) {
    for (const char* t : {"true", "on", "yes", "1"})
        if (v == t) return true;
    for (const char* f : {"false", "off", "no", "0"})
        if (v == f) return false;
    throw Error(where, "'" + key + "' is a flag: its value must be true or false, got '" + excerpt(v) + "'");
}

// The config file's path from --config FILE or --config=FILE, or "" without --config.
std::string config_path(const std::vector<std::string>& args) {
    for (size_t i = 0; i < args.size(); i++) {
        std::string path;
        if (args[i] == "--config" && i + 1 < args.size()) path = args[i + 1];
        else if (args[i].rfind("--config=", 0) == 0) path = args[i].substr(9);
        else continue;
        // Read as no --config, it would run on the defaults of every flag the file was to set.
        if (path.empty()) throw Error("--config", "is empty; name the config file");
        return path;
    }
    return "";
}

// Flag -> FILE:LINE of the current verb's config file; one verb runs per process.
std::map<std::string, std::string>& config_lines() {
    static std::map<std::string, std::string> lines;
    return lines;
}

std::string config_line(const std::string& flag) {
    const auto it = config_lines().find(flag);
    return it == config_lines().end() ? "" : it->second;
}

}  // namespace

std::vector<ConfigArg> config_file_args(CLI::App& app, const std::string& verb, const std::vector<std::string>& args) {
    std::vector<ConfigArg> out;
    config_lines().clear();
    if (!app.get_option_no_throw("--config")) return out;
    const std::string path = config_path(args);
    if (path.empty()) return out;
    // Read whole: a directory or a read error is named here, not taken for an empty file.
    std::string text = read_whole_file(path);
    // Some editors begin a UTF-8 file with a byte-order mark: invisible in any error quoting it.
    refuse_wide_text(text, path);
    text.erase(0, utf8_bom_size(text));
    std::istringstream f(text);
    // Flags on the command line, by option, so that the file does not repeat them.
    std::set<const CLI::Option*> given;
    for (const std::string& a : args)
        if (a.rfind("--", 0) == 0)
            if (const CLI::Option* o = app.get_option_no_throw(a.substr(0, a.find('=')))) given.insert(o);
    std::set<std::string> other_verbs;
    for (const Verb& v : verbs()) other_verbs.insert(v.name);
    other_verbs.erase(verb);
    // The line each option was first set on: a second setting is a mistake whichever wins.
    std::map<const CLI::Option*, int> first_line;
    std::string line;
    int lineno = 0;
    bool applies = true;
    while (std::getline(f, line)) {
        lineno++;
        const std::string where = path + ":" + std::to_string(lineno);
        const std::string t = trim(line);
        if (t.empty() || t[0] == '#' || t[0] == ';') continue;
        if (t[0] == '[') {
            const std::string header = trim(t.substr(0, comment_start(t)));
            if (header.back() != ']') throw Error(where, "malformed section header '" + excerpt(t) + "'");
            const std::string section = trim(header.substr(1, header.size() - 2));
            const std::string first = section.substr(0, section.find('.'));
            if (section == verb) applies = true;
            else if (other_verbs.count(first)) applies = false;
            else throw Error(where, "unknown section [" + excerpt(section) + "] (use [" + verb + "] or none)");
            continue;
        }
        const size_t eq = t.find('=');
        if (eq == std::string::npos) throw Error(where, "expected 'key = value', got '" + excerpt(t) + "'");
        std::string key = trim(t.substr(0, eq));
        if (key.rfind("--", 0) == 0) key = key.substr(2);
        for (char& c : key)
            if (c == '_') c = '-';
        if (!applies) continue;
        const std::string flag = "--" + key;
        const CLI::Option* opt = key.empty() ? nullptr : app.get_option_no_throw(flag);
        // `help = true` printed the flags and ran nothing, exit status 0.
        if (opt && opt == app.get_help_ptr())
            throw Error(where, "'" + excerpt(trim(t.substr(0, eq))) + "' is not a setting: --help prints the flags a config file may set");
        if (!opt)
            throw Error(where, "unknown key '" + excerpt(trim(t.substr(0, eq))) + "' (sixnd " + verb + " has no " +
                                   excerpt(flag) + ")");
        if (key == "config") throw Error(where, "a config file cannot name another config file");
        if (!first_line.emplace(opt, lineno).second)
            throw Error(where, "duplicate key '" + trim(t.substr(0, eq)) + "' (first set on line " +
                                   std::to_string(first_line[opt]) + ")");
        if (given.count(opt)) continue;
        const std::string value = unquote(trim(t.substr(eq + 1)), where);
        config_lines()[opt->get_name()] = where;
        ConfigArg a{where, flag, {}};
        if (opt->get_expected_min() == 0) {
            if (flag_value(value, where, key)) a.args.push_back(flag);
        } else {
            a.args = {flag, value};
        }
        out.push_back(a);
    }
    return out;
}

std::string with_config_line(const Error& e) {
    // Built from its parts, not what(): a C string ends at a zero byte that quoted input may hold.
    const std::string message = e.where().empty() ? e.fault() : e.where() + ": " + e.fault();
    if (e.where().rfind("--", 0) != 0) return message;
    std::istringstream flags(e.where());
    for (std::string flag; std::getline(flags, flag, '/');)
        if (const std::string where = config_line(flag); !where.empty()) return where + ": " + message;
    return message;
}

}  // namespace sixnd::cli
