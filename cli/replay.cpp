// sixnd replay: the data x state ablation of a loss spike (train/replay.h has the experiment and
// the verdict's rule). Prints a small table, then, as its last line, the JSON with "verdict".
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/uint64_flag.h"
#include "cli/verbs.h"
#include "core/error.h"
#include "train/replay.h"

namespace sixnd::cli {

namespace {

const char* meaning(const std::string& verdict) {
    if (verdict == "data") return "the spike rows are high from the earlier state too: the batch itself is bad";
    if (verdict == "interaction") return "the spike rows are high only from the later state: the batch meets that state";
    if (verdict == "state") return "every batch is high from this state: the parameters, not the batch";
    return "the spike rows are not high from this state: not this batch (the step's update, the LR, the hardware?)";
}

void print_table(const nlohmann::json& r) {
    std::printf("replay of the spike at step %lld: %zu rows x %d tokens, baseline %d other batches (seed %llu), %s\n",
                r["step"].get<long long>(), r["rows"].get<size_t>(), r["seq_len"].get<int>(), r["other_batches"].get<int>(),
                static_cast<unsigned long long>(r["seed"].get<uint64_t>()), r["device"].get<std::string>().c_str());
    std::printf("  %-20s %8s  %10s  %-22s  %9s  %s\n", "from", "step", "spike rows", "other batches", "threshold", "spikes");
    for (const char* k : {"checkpoint", "earlier"}) {
        const nlohmann::json& s = r[k];
        const std::string others = [&] {
            char b[64];
            std::snprintf(b, sizeof b, "%.4f +- %.4f", s["others_mean"].get<double>(), s["others_std"].get<double>());
            return std::string(b);
        }();
        std::printf("  %-20s %8d  %10.4f  %-22s  %9.4f  %s\n", k == std::string("checkpoint") ? "checkpoint" : "earlier checkpoint",
                    s["step"].get<int>(), s["spike_loss"].get<double>(), others.c_str(), s["threshold"].get<double>(),
                    s["spikes"].get<bool>() ? "yes" : "no");
    }
    if (!r["run_row_loss_diff"].is_null())
        std::printf("  the spike rows' losses against the run's: largest difference %.3g\n", r["run_row_loss_diff"].get<double>());
    if (!r["reference_loss"].is_null()) std::printf("  the run's loss before the spike: %.4f\n", r["reference_loss"].get<double>());
    std::printf("verdict: %s (%s)\n", r["verdict"].get<std::string>().c_str(), meaning(r["verdict"].get<std::string>()));
}

}  // namespace

int run_replay(int argc, char** argv) {
    CLI::App app{"PaLM's ablation of a loss spike: its batch from the checkpoint before it, other batches from there, "
                 "and its batch from an earlier checkpoint",
                 "sixnd replay"};
    ReplayOptions o;
    app.add_option("--checkpoint", o.checkpoint, "checkpoint directory from before the spike")->required();
    app.add_option("--spike-report", o.spike_report, "the spike report (OUT/spikes/step-NNNNNNN.json)")->required();
    app.add_option("--train-data", o.train_data, "glob (or manifest) of the training shards: other batches come from here")->required();
    app.add_option("--earlier-checkpoint", o.earlier_checkpoint,
                   "an older checkpoint (default: the report's run.checkpoint_earlier, else the oldest of the run before --checkpoint)");
    app.add_option("--other-batches", o.other_batches, "baseline batches of as many rows as the spike's (2 to 100000)")
        ->capture_default_str();
    app.add_option("--seed", o.seed, "draws the baseline's rows")->capture_default_str()->check(uint64_value());
    app.add_option("--device", o.device, "cpu, cuda or auto")->capture_default_str();
    if (!parse_flags(app, argc, argv)) return 0;
    refuse_empty_values(app);
    const nlohmann::json r = replay_spike(o);
    print_table(r);
    std::printf("%s\n", r.dump().c_str());
    return 0;
}

}  // namespace sixnd::cli
