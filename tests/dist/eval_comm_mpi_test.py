"""Evaluation's communication under mpirun -np 2: at ZeRO-3 each `eval` event carries the bytes
its forward passes' gathers sent, and no step record is charged with them (a step after an
evaluation sends no more than the same step of a run without one); at ZeRO-1 an evaluation
sends nothing (its loss is averaged on the host)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
MPIRUN = shutil.which("mpirun")


def run(tmp, stage, eval_every):
    name = f"zero{stage}_eval{eval_every}"
    log = os.path.join(tmp, name + ".jsonl")
    cmd = [MPIRUN, "-np", "2", SIXND, "train", "--init", "random",
           "--model", "tiny", "--vocab-size", "101", "--train-data", os.path.join(tmp, "t.bin"),
           "--val-data", os.path.join(tmp, "v.bin"), "--device", "cpu", "--dtype", "fp32", "--batch", "2",
           "--seq-len", "16", "--steps", "4", "--eval-every", str(eval_every), "--eval-batches", "2",
           "--zero", str(stage), "--peak-tflops", "1", "--out", os.path.join(tmp, name), "--log", log]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=sixnd_files.MPI_ENV)
    if r.returncode != 0:
        raise RuntimeError(f"{name}: exit {r.returncode}: {r.stderr[-2000:]}")
    recs = [json.loads(x) for x in open(log)]
    return ([r for r in recs if r.get("type") == "event" and r.get("event") == "eval"],
            [r for r in recs if r.get("type") == "step"])


def main():
    if not MPIRUN:
        print("SKIP: mpirun is not installed")
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(0)
        sixnd_files.write_shard(os.path.join(tmp, "t.bin"), list(rng.integers(0, 101, 3000)))
        sixnd_files.write_shard(os.path.join(tmp, "v.bin"), list(rng.integers(0, 101, 1000)))
        evals, steps = run(tmp, 3, 2)
        _, quiet = run(tmp, 3, 0)
        sent = [e.get("comm_bytes") for e in evals]
        print(f"ZeRO-3: eval events' comm_bytes {sent}; steps {[s['comm_bytes'] for s in steps]}, "
              f"without evaluation {[s['comm_bytes'] for s in quiet]}")
        if len(evals) != 2 or not all(isinstance(b, (int, float)) and b > 0 for b in sent):
            failures.append(f"ZeRO-3: eval events' comm_bytes {sent}, expected two positive counts")
        # A step after an evaluation sends no more than the same step of a run without one (the
        # evaluation's gathers are not booked to it).
        for s, q in zip(steps, quiet):
            if s["comm_bytes"] > q["comm_bytes"]:
                failures.append(f"ZeRO-3 step {s['step']}: {s['comm_bytes']} B with evaluation, {q['comm_bytes']} B without")
        evals1, _ = run(tmp, 1, 2)
        sent1 = [e.get("comm_bytes") for e in evals1]
        print(f"ZeRO-1: eval events' comm_bytes {sent1}")
        if len(evals1) != 2 or any(b != 0 for b in sent1):
            failures.append(f"ZeRO-1: eval events' comm_bytes {sent1}, expected 0 for each of two")
    return sixnd_files.report(failures, "evaluation's communication under mpirun")


if __name__ == "__main__":
    sys.exit(main())
