// sixnd: one binary, a verb per file (cli/<verb>.cpp). Every error ends here as one line on
// stderr and exit status 1.
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/config_file.h"
#include "cli/verbs.h"
#include "core/error.h"
#include "core/printable.h"
#include "core/std_fds.h"
#include "dist/comm.h"

namespace {

void usage(FILE* out) {
    std::fprintf(out,
                 "usage: sixnd <verb> [flags]   (sixnd <verb> --help for its flags; sixnd --version)\n"
                 "verbs:\n");
    for (const auto& v : sixnd::cli::verbs()) std::fprintf(out, "  %-10s %s\n", v.name, v.summary);
}

// The version, and what this binary was built with.
void version() {
    std::printf("sixnd 0.1.0 (built %s with %s; CUDA %s, MPI %s, NCCL %s, oneDNN %s)\n", __DATE__, __VERSION__,
#ifdef SIXND_HAVE_CUDA
                "on",
#else
                "off",
#endif
#ifdef SIXND_HAVE_MPI
                "on",
#else
                "off",
#endif
#ifdef SIXND_HAVE_NCCL_COMM
                "on",
#else
                "off",
#endif
#ifdef SIXND_HAVE_ONEDNN
                "on"
#else
                "off"
#endif
    );
}

// Output lost to a full disk or a closed stdout is a failure like any other (a sample's text, a
// result's JSON): the exit status says so, and one error line says why.
int flushed(const std::string& who, int rc) {
    if (rc != 0) return rc;  // the verb has said what failed
    // std::cout shares stdio's buffer: its flush is the write that fails, and a second flush finds
    // nothing left to write, so the reason is taken from the first failure.
    errno = 0;
    std::cout.flush();
    int err = std::cout.good() ? 0 : errno;
    errno = 0;
    const bool ok = std::fflush(stdout) == 0;
    if (!ok && !err) err = errno;
    if (ok && !std::ferror(stdout) && std::cout.good()) return rc;
    std::fprintf(stderr, "%s: error: stdout: write failed%s%s\n", who.c_str(), err ? ": " : "", err ? std::strerror(err) : "");
    return 1;
}

}  // namespace

void sixnd::cli::print_error(const char* verb, const std::exception& e) {
    const auto* error = dynamic_cast<const sixnd::Error*>(&e);
    // A message may quote input (a file name, a line): it stays one line of valid UTF-8.
    std::fprintf(stderr, "sixnd %s: error: %s\n", verb, sixnd::printable(error ? with_config_line(*error) : e.what()).c_str());
}

int main(int argc, char** argv) {
    sixnd::occupy_closed_std_fds();  // before any file is opened (core/std_fds.h)
    // Past RLIMIT_FSIZE a write then fails with EFBIG and its error names the file; the default
    // SIGXFSZ would end the process in silence, its temporary files left behind.
    std::signal(SIGXFSZ, SIG_IGN);
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return flushed("sixnd", argc < 2 ? 2 : 0);
    }
    if (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "-V")) {
        version();
        return flushed("sixnd", 0);
    }
    for (const auto& v : sixnd::cli::verbs()) {
        if (std::strcmp(argv[1], v.name) != 0) continue;
        const std::string who = std::string("sixnd ") + v.name;
        try {
            return flushed(who, v.run(argc - 1, argv + 1));
        } catch (const sixnd::cli::ErrorPrinted&) {
        } catch (const std::exception& e) {
            sixnd::wait_for_rank_zero_to_report();
            sixnd::cli::print_error(v.name, e);
        }
        sixnd::abort_after_lone_failure();
        return 1;
    }
    std::vector<std::string> names;
    for (const auto& v : sixnd::cli::verbs()) names.emplace_back(v.name);
    const std::string near = sixnd::cli::closest_name(argv[1], names);
    std::fprintf(stderr, "sixnd: error: unknown verb '%s'%s\n", sixnd::printable(argv[1]).c_str(),
                 near.empty() ? "" : (" (did you mean " + near + "?)").c_str());
    usage(stderr);
    return 2;
}
