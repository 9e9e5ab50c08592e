"""`sixnd replay` of the reports a real run writes: a BF16 Muon run with gradient accumulation
and an injected junk batch at step 101. From the checkpoint at step 100, the state the spike's
step started from, the replay gives each spike row the run's own loss bit for bit and the
verdict "data". The same run with --on-spike rollback goes back to step 90 and writes step 100
again from other batches: the report's checkpoint_before is then not the state the spike saw,
and the replay says so (a warning naming --checkpoint, and run_row_loss_diff in the JSON)."""
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
import tiny_text  # noqa: E402

T, B, SPIKE = 32, 4, 101
TOLERANCE = 1e-3  # train/replay.h kReplayRowTolerance


def train(paths, out, on_spike):
    flags = tiny_text.train_flags(paths, steps=SPIKE + 2, batch=B, seq_len=T)
    flags[flags.index("fp32")] = "bf16"
    tiny_text.sixnd("train", *flags, "--optimizer", "muon", "--total-batch-tokens", str(2 * B * T), "--checkpoint-every",
                    "10", "--keep-last", "0", "--spike-window", "32", "--spike-z-grad", "0", "--inject-junk-batch",
                    str(SPIKE), "--on-spike", on_spike, "--out", out)
    with open(os.path.join(out, "spikes", f"step-{SPIKE:07d}.json")) as f:
        return json.load(f)


def replay(out, data):
    r = tiny_text.sixnd("replay", "--checkpoint", os.path.join(out, "checkpoints", f"step-{SPIKE - 1:08d}"),
                        "--spike-report", os.path.join(out, "spikes", f"step-{SPIKE:07d}.json"), "--train-data", data,
                        "--device", "cpu")
    print(r.stdout.strip().splitlines()[-2])
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = tiny_text.make(tmp)
        warned = train(paths, os.path.join(tmp, "warn"), "warn")
        v, err = replay(os.path.join(tmp, "warn"), paths["train"])
        theirs = [row["loss"] for row in warned["batch"]["rows"]]
        if v["checkpoint"]["row_losses"] != theirs or v.get("run_row_loss_diff") != 0:
            failures.append(f"from the checkpoint before the spike the rows' losses are {v['checkpoint']['row_losses']}, "
                            f"the run's {theirs} (diff {v.get('run_row_loss_diff')})")
        if v["verdict"] != "data" or "not the state the spike saw" in err:
            failures.append(f"the junk batch replayed: verdict {v['verdict']}; stderr {err.strip()}")
        # Progress off a terminal too (it showed only on one), each pass's last line at its last row.
        shown = re.findall(r"^replay ([\w ]+): row (\d+)/(\d+)$", err, re.M)
        if {side for side, done, total in shown if done == total} != {"checkpoint", "earlier checkpoint"}:
            failures.append(f"replay's progress lines off a terminal: {shown}")

        train(paths, os.path.join(tmp, "rollback"), "rollback")
        v, err = replay(os.path.join(tmp, "rollback"), paths["train"])
        said = [line for line in err.splitlines() if "not the state the spike saw" in line]
        diff = v.get("run_row_loss_diff")
        if diff is None or diff <= TOLERANCE * v["checkpoint"]["spike_loss"] or len(said) != 1 or "--checkpoint" not in said[0]:
            failures.append(f"a checkpoint rewritten after the rollback: diff {diff}, stderr {err.strip()}")
    return sixnd_files.report(failures, "sixnd replay of a run's own spike: the run's row losses, a rewritten checkpoint said")


if __name__ == "__main__":
    sys.exit(main())
