"""A `--stop-at` run resumed with its own flags follows the learning-rate curve of the run that
never stopped (the oracle: that run's log), and says nothing of the schedule. A resume whose flags
move the rates off that curve (a --steps or --lr left at another value: the decay is stretched, the
peak changed) is warned of, naming the flags; one whose rates stay as they were (a constant
schedule run for longer) is not. The run log records the float options as the decimals given
(0.001, not 0.0010000000474974513), and a resume compares them as the floats they are."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")
WARNING = "another learning-rate schedule"


def train(tmp, out, *extra, schedule="cosine", lr="1e-3"):
    log = os.path.join(tmp, out + ".jsonl")
    r = subprocess.run([SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--train-data",
                        os.path.join(tmp, "train.bin"), "--device", "cpu", "--dtype", "fp32", "--batch", "2", "--seq-len",
                        "16", "--schedule", schedule, "--warmup", "2", "--lr", lr, "--peak-tflops", "1", "--log", log,
                        "--out", os.path.join(tmp, out), *extra], capture_output=True, text=True, env=ENV, timeout=300)
    lrs = {}
    if os.path.exists(log):
        for line in open(log):
            e = json.loads(line)
            if e.get("type") == "step":
                lrs[e["step"]] = e["lr"]
    return r, lrs


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sixnd_files.write_shard(os.path.join(tmp, "train.bin"), [(i * 7 + i // 13) % 256 for i in range(3000)])
        _, whole = train(tmp, "whole", "--steps", "8", "--beta2", "0.97", "--weight-decay", "0.1")
        header = json.loads(open(os.path.join(tmp, "whole.jsonl")).readline())
        given = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.97, "eps": 1e-8, "weight_decay": 0.1, "grad_clip": 1.0,
                 "final_lr_frac": 0.0, "muon_lr": 0.02, "muon_momentum": 0.95}
        recorded = {k: header["config"][k] for k in given}
        print(f"recorded float options: {recorded}")
        if recorded != given:
            failures.append(f"the run log's float options {recorded} are not the decimals given {given}")
        cases = [("cosine, the same --steps", "cosine", "8", "1e-3", None),
                 ("cosine, --steps 8 -> 12", "cosine", "12", "1e-3", "--steps 8 -> 12"),
                 ("cosine, --lr 1e-3 -> 2e-3", "cosine", "8", "2e-3", "--lr 0.001 -> 0.002"),
                 ("constant, --steps 8 -> 12", "constant", "12", "1e-3", None)]
        for i, (name, schedule, steps, lr, named) in enumerate(cases):
            out = f"split{i}"
            first, _ = train(tmp, out, "--steps", "8", "--stop-at", "4", schedule=schedule)
            # One log for both parts: its rates are the whole run's, steps 1-4 before the stop.
            r, lrs = train(tmp, out, "--resume", "latest", "--steps", steps, schedule=schedule, lr=lr)
            warned = [x for x in r.stderr.splitlines() if WARNING in x]
            print(f"{name}: exit {first.returncode}/{r.returncode}, warned: {warned}")
            if first.returncode != 0 or r.returncode != 0:
                failures.append(f"{name}: a run failed: {first.stderr.strip()[-300:]} {r.stderr.strip()[-300:]}")
            elif named is None and warned:
                failures.append(f"{name}: warned of a schedule whose rates did not change: {warned}")
            elif named is not None and (len(warned) != 1 or named not in warned[0]):
                failures.append(f"{name}: no warning naming {named!r}: {r.stderr.strip()[-600:]}")
            if named is None and schedule == "cosine" and lrs != whole:
                failures.append(f"{name}: the resumed rates {lrs} are not the uninterrupted run's {whole}")
    return sixnd_files.report(failures, "a resume warns when its flags bend the learning-rate curve")


if __name__ == "__main__":
    sys.exit(main())
