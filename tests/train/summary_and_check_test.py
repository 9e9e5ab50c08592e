"""`sixnd train`'s closing summary against its run log, and --check against a real start.

The summary's "loss" is the last step's as the log records it: with gradient accumulation the
step's loss is a mean of micro-batch losses (three here) that a float seldom holds, and the summary once printed it
rounded to a float (4.432517051696777 against the log's 4.4325172901153564). A resume whose
--steps leaves nothing to train prints its error alone. And a --device the
run refuses (cuda in a build without CUDA, or with no usable GPU) is refused by --check too, with
the same error; where the run takes it, --check passes."""
import json
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "train.bin")
        # Rows unlike each other: identical micro-batches would have one loss, their mean a float.
        sixnd_files.write_shard(data, [(i * 7919 + i // 13) % 128 for i in range(4000)])
        base = [SIXND, "train", "--model", "tiny", "--vocab-size", "128", "--train-data", data, "--batch", "2",
                "--seq-len", "16", "--dtype", "fp32", "--steps", "2"]

        log = os.path.join(tmp, "run.jsonl")
        r = subprocess.run(base + ["--total-batch-tokens", "96", "--device", "cpu", "--out", os.path.join(tmp, "run"),
                                   "--log", log], capture_output=True, text=True, env=ENV, timeout=300)
        if r.returncode != 0:
            failures.append(f"the run failed: {r.stderr.strip()!r}")
        else:
            summary = json.loads(r.stdout.strip().splitlines()[-1])
            steps = [x for x in map(json.loads, open(log)) if x.get("type") == "step"]
            print(f"summary loss {summary['loss']!r}, the log's last step's {steps[-1]['loss']!r}")
            last = steps[-1]["loss"]
            # Three micro-batch losses that happen to be equal (as at step 1 here, near the uniform
            # start) have a float mean: the rounding is then invisible, and not looked for.
            if struct.unpack("f", struct.pack("f", last))[0] == last:
                print(f"the last step's loss {last!r} is a float: a rounded summary cannot be told apart here")
            elif summary["loss"] != last:
                failures.append(f"the summary's loss {summary['loss']!r} is not the log's last step's {steps[-1]['loss']!r}")

        # A resume with nothing left to train is refused before the checkpoint is loaded: the
        # error alone, without the notes on a resume it does not make (its schedule "from step 3").
        r = subprocess.run(base[:-1] + ["1", "--total-batch-tokens", "96", "--device", "cpu", "--out", os.path.join(tmp, "run"),
                                        "--resume", "latest"], capture_output=True, text=True, env=ENV, timeout=300)
        lines = r.stderr.strip().splitlines()
        print(f"--steps 1 on a checkpoint at step 2: exit {r.returncode}, {lines}")
        if r.returncode == 0 or len(lines) != 1 or "--steps: the checkpoint is already at step 2" not in lines[0]:
            failures.append(f"--steps 1 on a checkpoint at step 2: exit {r.returncode}, {lines}; wanted the one error")

        out = os.path.join(tmp, "cuda_run")
        run = subprocess.run(base + ["--device", "cuda", "--out", out], capture_output=True, text=True, env=ENV, timeout=300)
        check = subprocess.run(base + ["--device", "cuda", "--out", os.path.join(tmp, "cuda_check"), "--check"],
                               capture_output=True, text=True, env=ENV, timeout=120)
        run_error = [x for x in run.stderr.splitlines() if "error" in x]
        check_error = [x for x in check.stderr.splitlines() if "error" in x]
        print(f"--device cuda: run exit {run.returncode} {run_error}; --check exit {check.returncode} {check_error}")
        if (run.returncode == 0) != (check.returncode == 0) or run_error != check_error:
            failures.append(f"--device cuda: the run exits {run.returncode} with {run_error}, --check exits "
                            f"{check.returncode} with {check_error}")
        if os.path.exists(os.path.join(tmp, "cuda_check")):
            failures.append("--check created its --out")
    return sixnd_files.report(failures, "the summary and --check")


if __name__ == "__main__":
    sys.exit(main())
