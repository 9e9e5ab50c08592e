"""`--resume DIR` of a directory that is not a checkpoint says what DIR is — no checkpoint at all,
a run directory, a checkpoint that was never finished — in one error line naming it, and leaves
it as it was. An empty directory, or a run killed before its first checkpoint, is no
"incomplete checkpoint": nothing was ever written there to complete. A meta.json that is a FIFO
is named, not read: no writer would ever end the read. A finished checkpoint whose meta.json is
damaged is named as damaged (by the file and the fault), not as another run's; `--resume latest`
that finds it names the finished checkpoint before it as the way on."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402
from bad_input import Case, run_cases, SIXND  # noqa: E402

ENV = {"OMP_NUM_THREADS": "1", "ASAN_OPTIONS": "detect_leaks=0"}


def main():
    d = tempfile.mkdtemp(prefix="sixnd_resume_bad_")
    try:
        data = os.path.join(d, "train.bin")
        sixnd_files.write_shard(data, np.random.default_rng(0).integers(0, 256, 4000))
        train = ["train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--max-seq-len", "32", "--device",
                 "cpu", "--dtype", "fp32", "--train-data", data, "--batch", "2", "--seq-len", "16", "--peak-tflops", "1"]

        def trained(out, *flags):
            r = subprocess.run([SIXND] + train + list(flags) + ["--out", out], capture_output=True, text=True,
                               env=dict(os.environ, **ENV))
            if r.returncode != 0:
                raise RuntimeError(f"the run into {out} failed: {r.stderr.strip()[-300:]}")
            return out
        run = trained(os.path.join(d, "run"), "--steps", "2")
        ck = sixnd_files.last_checkpoint(run)
        empty = os.path.join(d, "empty")
        os.makedirs(empty)
        unsaved = os.path.join(d, "unsaved")  # a run killed before its first checkpoint: its lock and log
        os.makedirs(unsaved)
        for name in (".lock", "run.jsonl"):
            shutil.copy(data, os.path.join(unsaved, name))
        piped = os.path.join(d, "piped")  # a checkpoint whose meta.json is a FIFO: nothing ever writes it
        shutil.copytree(run, piped)
        piped_meta = os.path.join(sixnd_files.last_checkpoint(piped), "meta.json")
        os.remove(piped_meta)
        os.mkfifo(piped_meta)
        undone = os.path.join(d, "undone")
        shutil.copytree(ck, undone)
        os.remove(os.path.join(undone, "DONE"))
        renamed = os.path.join(d, "renamed", "checkpoints", "step-00000007")  # step 2's copy under another step's name
        shutil.copytree(ck, renamed)
        # A run whose newest checkpoint's meta.json was damaged: resuming its older one, or starting
        # afresh there, was refused as if the damaged one were another run's ("continue that run
        # with --resume latest"), which reads the damaged file again.
        damaged = trained(os.path.join(d, "damaged"), "--steps", "4", "--checkpoint-every", "2", "--keep-last", "0")
        damaged_meta = os.path.join(sixnd_files.last_checkpoint(damaged), "meta.json")
        with open(damaged_meta) as f:
            text = f.read()
        with open(damaged_meta, "w") as f:
            f.write(text.replace('"step": 4', '"step": 5'))
        damaged_root = os.path.join(damaged, "checkpoints")
        damaged_older = os.path.join(damaged_root, "step-00000002")

        def resume(target, out=os.path.join(d, "out")):
            return train + ["--steps", "4", "--out", out, "--resume", target]
        cases = [
            Case("an empty directory", resume(empty), [empty, "not a checkpoint"], unchanged=[empty], env=ENV),
            Case("a run directory with no checkpoint yet", resume(unsaved), [unsaved, "not a checkpoint"],
                 unchanged=[unsaved], env=ENV),
            Case("a run directory", resume(run), [run, "is a run directory", ck], unchanged=[run], env=ENV),
            Case("a checkpoint whose meta.json is a FIFO", resume(os.path.dirname(piped_meta)), [piped_meta, "FIFO"],
                 unchanged=[piped], env=ENV, timeout=60),
            Case("--resume latest in a run whose checkpoint's meta.json is a FIFO", resume("latest", piped),
                 [piped_meta, "FIFO"], unchanged=[os.path.join(piped, "checkpoints")], env=ENV, timeout=60),
            Case("a checkpoint without DONE", resume(undone), [undone, "incomplete checkpoint", "DONE"],
                 unchanged=[undone], env=ENV),
            Case("a checkpoint renamed to another step", resume(renamed + "/"),
                 [renamed, "step 2 (its meta.json)", "name step-00000007"], unchanged=[renamed], env=ENV),
            Case("an older checkpoint of a run whose newest is damaged", resume(damaged_older, damaged),
                 [damaged_meta, "checksum mismatch", "which run saved", "--overwrite"], unchanged=[damaged_root], env=ENV),
            Case("a fresh run where a damaged checkpoint lies", train + ["--steps", "4", "--out", damaged],
                 [damaged_meta, "checksum mismatch", "which run saved"], unchanged=[damaged_root], env=ENV),
            # `--resume latest` names the way on: the finished checkpoint before the damaged one.
            Case("--resume latest whose newest is damaged", resume("latest", damaged),
                 [damaged_meta, "checksum mismatch", "--resume latest takes " + damaged_older + ", the one before it"],
                 unchanged=[damaged_root], env=ENV),
        ]
        return run_cases(cases, "--resume of what is not a checkpoint")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
