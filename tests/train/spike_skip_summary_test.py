"""`sixnd train`'s summary line (the last on stdout) gives the loss of the last step it ran, also
when that step was skipped as a spike (--on-spike skip), as it does for a step skipped as
non-finite: it gave the loss of an earlier step, and 0 for a run whose every step was skipped
(a resumed run that only met spikes). The oracle is the run log's skip event."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        data, out, log = (os.path.join(tmp, n) for n in ("train.bin", "run", "run.jsonl"))
        sixnd_files.write_repeating_shard(data)
        # A junk batch at the last step, after a window of 4 steps: skipped as a spike.
        r = subprocess.run([SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--max-seq-len",
                            "32", "--device", "cpu", "--dtype", "fp32", "--train-data", data, "--batch", "2", "--seq-len",
                            "16", "--steps", "8", "--lr", "1e-3", "--spike-window", "4", "--spike-z-loss", "3",
                            "--spike-z-grad", "0", "--inject-junk-batch", "8", "--on-spike", "skip", "--out", out, "--log",
                            log], capture_output=True, text=True, env=sixnd_files.MPI_ENV, timeout=300)
        if r.returncode != 0:
            failures.append(f"the run failed ({r.returncode}): {r.stderr[-500:]}")
        else:
            summary = json.loads(r.stdout.strip().splitlines()[-1])
            skips = [json.loads(x) for x in open(log) if '"skip"' in x]
            skipped = [(s["step"], s["loss"]) for s in skips if s.get("event") == "skip"]
            print(f"skipped {skipped}; the summary's loss {summary['loss']}")
            if [s for s, _ in skipped] != [8]:
                failures.append(f"expected step 8 skipped as a spike: {skipped}")
            elif abs(summary["loss"] - skipped[0][1]) > 1e-6 * abs(skipped[0][1]):
                failures.append(f"the summary's loss {summary['loss']} is not the skipped last step's {skipped[0][1]}")
    return sixnd_files.report(failures, "the summary's loss after a step skipped as a spike")


if __name__ == "__main__":
    sys.exit(main())
