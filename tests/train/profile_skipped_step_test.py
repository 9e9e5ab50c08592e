"""`sixnd train --profile N` books the steps it profiles and nothing else. A step inside the window
that is skipped as a spike (`--on-spike skip`, a junk batch injected at step 8) never ends: its
forward and backward must not be booked under the other steps' time, or every op's calls and
FLOPs per step read (N)/(N - 1) too high and the rows add up to more than the step. The oracle is
arithmetic on the tiny model's shapes; no time is compared. A run whose profiled steps were all
skipped (non-finite after a learning-rate spike) has no profile, and says so."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
B, T, C, L = 2, 16, 48, 2  # --model tiny at --batch 2 --seq-len 16


def train_cmd(tmp, name, *extra):
    out, log = os.path.join(tmp, name), os.path.join(tmp, name + ".jsonl")
    return out, log, [SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--max-seq-len", "32",
                      "--device", "cpu", "--dtype", "fp32", "--train-data", os.path.join(tmp, "train.bin"), "--batch",
                      str(B), "--seq-len", str(T), "--checkpoint-every", "0", "--out", out, "--log", log, *extra]


def all_skipped(tmp, failures):
    out, log, cmd = train_cmd(tmp, "all_skipped", "--steps", "3", "--profile", "2", "--inject-lr-spike", "1:1e30:3",
                              "--max-bad-steps", "5")
    r = subprocess.run(cmd, capture_output=True, text=True, env=sixnd_files.MPI_ENV, timeout=300)
    if r.returncode != 0:
        failures.append(f"the run with every profiled step skipped failed ({r.returncode}): {r.stderr[-500:]}")
        return
    if os.path.exists(os.path.join(out, "profile.json")):
        failures.append("a profile.json from steps that were all skipped")
    if "--profile: no profile: steps 2-3 were each skipped or rolled back" not in r.stderr:
        failures.append(f"no word of the missing profile: {r.stderr[-800:]}")


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sixnd_files.write_repeating_shard(os.path.join(tmp, "train.bin"))
        out, log, cmd = train_cmd(tmp, "run", "--steps", "10", "--lr", "1e-3", "--profile", "9", "--spike-window", "4",
                                  "--spike-z-loss", "3", "--spike-z-grad", "0", "--inject-junk-batch", "8", "--on-spike",
                                  "skip")
        recs = sixnd_files.run_train(cmd, "profiled run", log)
        skipped = [r["step"] for r in recs if r.get("event") == "skip"]
        if skipped != [8]:
            failures.append(f"expected step 8 skipped as a spike, the log skips {skipped}")
        p = json.load(open(os.path.join(out, "profile.json")))
        if p["steps"] != 8:
            failures.append(f"the profile counts {p['steps']} steps; steps 2-10 less the skipped one are 8")
        rows = {r["name"]: r for r in p["rows"]}
        qkv = rows.get(f"matmul_forward N={B * T} C={C} OC={3 * C}")
        if qkv is None:
            failures.append("no row for the c_attn matmul")
        else:
            if qkv["calls_per_step"] != L:
                failures.append(f"c_attn forward: {qkv['calls_per_step']} calls per step, the model makes {L}")
            want = L * 2.0 * B * T * C * 3 * C
            if abs(qkv["flops_per_step"] - want) > 1e-9 * want:
                failures.append(f"c_attn forward: {qkv['flops_per_step']} FLOPs per step, by hand {want}")
        for r in p["rows"]:
            if "calls_per_step" in r and r["calls_per_step"] != int(r["calls_per_step"]):
                failures.append(f"{r['name']}: {r['calls_per_step']} calls per step, not a whole number")
        all_skipped(tmp, failures)
    return sixnd_files.report(failures, "the profile books only the steps that ended")


if __name__ == "__main__":
    sys.exit(main())
