"""A resume that changes world size x --batch (the sequences of one micro-step across the ranks)
keeps the data position, but an epoch ends when fewer than that many samples remain, so after
the current epoch the run reads other samples than the uninterrupted one would: the resume says
so; resumes that keep it say nothing."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")
WARNING = "sequences per micro-step"


def train(tmp, batch, *extra):
    return subprocess.run([SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--train-data",
                           os.path.join(tmp, "train.bin"), "--device", "cpu", "--dtype", "fp32", "--batch", str(batch),
                           "--seq-len", "16", "--total-batch-tokens", "128", "--peak-tflops", "1",
                           "--out", os.path.join(tmp, "run"), *extra], capture_output=True, text=True, env=ENV)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sixnd_files.write_shard(os.path.join(tmp, "train.bin"), [(i * 7) % 256 for i in range(3000)])
        for name, batch, steps, warned in [("fresh run", 4, 2, False), ("same --batch", 4, 3, False),
                                           ("--batch 4 -> 2", 2, 4, True)]:
            extra = ["--steps", str(steps)] + (["--resume", "latest"] if steps > 2 else [])
            r = train(tmp, batch, *extra)
            said = WARNING in r.stderr
            print(f"{name}: exit {r.returncode}, warned {said}")
            if r.returncode != 0 or said != warned:
                failures.append(f"{name}: exit {r.returncode}, warning {'given' if said else 'missing'}: "
                                f"{r.stderr.strip()[-400:]}")
    return sixnd_files.report(failures, "a resume that changes the rows of a micro-step")


if __name__ == "__main__":
    sys.exit(main())
