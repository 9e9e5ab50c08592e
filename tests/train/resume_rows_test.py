"""An epoch ends when fewer than one step's samples remain, however the step is split into
micro-batches and ranks (data/loader.h). So a run resumed with another --batch and the same
tokens per step (more micro-batches) reads what the uninterrupted run reads, past the end of
the epoch too, and says nothing; a resume that changes the tokens per step (allowed with
--allow-resume-changes) reads other samples after this epoch, and says so.

The batches are seen through the losses: at --lr 1e-30 the weights never change, so a step's
loss is a function of its rows alone. 187 samples of 16 tokens, 8 a step: the epoch ends after
step 23 (an epoch that ended when fewer than --batch samples remain, as it did, put batch 4's
end after 46 micro-batches and batch 2's after 93, and the runs parted at step 24)."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")
WARNING = "tokens per step"
STEPS = 30


def train(tmp, out, batch, steps, *extra, total=128):
    log = os.path.join(tmp, out + ".jsonl")
    r = subprocess.run([SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--train-data",
                        os.path.join(tmp, "train.bin"), "--device", "cpu", "--dtype", "fp32", "--batch", str(batch),
                        "--seq-len", "16", "--total-batch-tokens", str(total), "--lr", "1e-30", "--peak-tflops", "1",
                        "--steps", str(steps), "--log", log, "--out", os.path.join(tmp, out), *extra],
                       capture_output=True, text=True, env=ENV)
    losses = {}
    if os.path.exists(log):
        for line in open(log):
            e = json.loads(line)
            if e.get("type") == "step":
                losses[e["step"]] = e["loss"]
    return r, losses


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sixnd_files.write_shard(os.path.join(tmp, "train.bin"), [(i * 7 + i // 13) % 256 for i in range(3000)])
        _, whole = train(tmp, "whole", 4, STEPS)
        train(tmp, "split", 4, 10)
        r, resumed = train(tmp, "split", 2, STEPS, "--resume", "latest")
        said = WARNING in r.stderr
        print(f"--batch 4 -> 2 at step 10: exit {r.returncode}, warned {said}, steps {min(resumed, default=0)}.."
              f"{max(resumed, default=0)}")
        if r.returncode != 0 or said:
            failures.append(f"--batch 4 -> 2 (same tokens per step): exit {r.returncode}, warning given: {r.stderr.strip()[-400:]}")
        parted = [s for s in range(11, STEPS + 1) if abs(resumed.get(s, 0) - whole.get(s, 1)) > 1e-6 * abs(whole.get(s, 1))]
        if parted:
            failures.append(f"--batch 4 -> 2: steps {parted} read other rows than the uninterrupted run "
                            f"(first: {resumed.get(parted[0])} vs {whole.get(parted[0])})")

        train(tmp, "more", 4, 10)
        r, _ = train(tmp, "more", 4, 12, "--resume", "latest", "--allow-resume-changes", total=256)
        said = WARNING in r.stderr
        print(f"--total-batch-tokens 128 -> 256: exit {r.returncode}, warned {said}")
        if r.returncode != 0 or not said:
            failures.append(f"--total-batch-tokens 128 -> 256: exit {r.returncode}, warning missing: {r.stderr.strip()[-400:]}")
    return sixnd_files.report(failures, "a resume that splits the step otherwise reads the same rows")


if __name__ == "__main__":
    sys.exit(main())
