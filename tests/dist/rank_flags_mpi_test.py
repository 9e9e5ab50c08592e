"""Ranks started with different flags (mpirun's MPMD form, "-np 1 sixnd train A : -np 1 sixnd
train B") are refused before any training, with one error line naming the ranks and the flags
that differ. Before, a different --weight-decay trained silently (rank 0's value recorded, each
rank using its own) and a different --steps or --zero hung in a collective; a different --out
failed only at the first checkpoint. Each case must end well inside the timeout, non-zero, with
nothing written under --out; the same flags on both ranks still train. A file only rank 1 cannot
use (its --init, --train-data or --val-data copy) stops both ranks together, naming it."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
MPIRUN = shutil.which("mpirun")
TIMEOUT = 120


def refused(name, rank0, rank1, words, failures):
    """Runs mpirun's MPMD form, rank 0 with `rank0` (mpirun options, then the command) and rank 1
    with `rank1`: the job must end non-zero inside TIMEOUT with one error line naming rank 1 and
    every one of `words`."""
    cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "1"] + rank0 + [":", "-np", "1"] + rank1
    ended = sixnd_files.mpi_job_errors(cmd, TIMEOUT)
    if ended is None:
        failures.append(f"{name}: hung past {TIMEOUT} s")
        return
    rc, errors = ended
    print(f"{name} differs on rank 1: exit {rc}; {errors}")
    if rc == 0:
        failures.append(f"{name}: exit 0")
    elif len(errors) != 1 or not all(w in errors[0] for w in words + ["rank 1", "different flags"]):
        failures.append(f"{name}: expected one error line naming rank 1 and {words}: {errors}")


def llmc_model(path, seed):
    """An llm.c model file (version 3, FP32) of the tiny preset's shape at vocabulary 256."""
    L, NH, C, V, T = 2, 4, 48, 256, 64
    h = [0] * 256
    h[:8] = [20240326, 3, T, V, L, NH, C, V]
    with open(path, "wb") as f:
        f.write(struct.pack("256i", *h))
        f.write(np.random.default_rng(seed).normal(0, 0.02, V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C)
                .astype(np.float32).tobytes())


def main():
    if not MPIRUN:
        print("SKIP: mpirun (openmpi-bin) not found")
        return 77
    failures = []
    tmp = tempfile.mkdtemp(prefix="sixnd_rank_flags_")
    try:
        data = os.path.join(tmp, "train.bin")
        sixnd_files.write_shard(data, [(i * 31) % 256 for i in range(20000)])
        base = [SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--train-data", data,
                "--device", "cpu", "--dtype", "fp32", "--batch", "2", "--seq-len", "16", "--peak-tflops", "1",
                "--checkpoint-every", "0"]
        cases = [("--weight-decay", {"--weight-decay": "0.1"}, ["--weight-decay"]),
                 ("--steps", {"--steps": "6"}, ["--steps"]),
                 ("--zero", {"--zero": "3"}, ["--zero"]),
                 ("--out", {"--out": os.path.join(tmp, "elsewhere")}, ["--out"]),
                 ("--n-layer and --lr", {"--n-layer": "1", "--lr": "1e-3"}, ["--lr, --n-layer"])]
        for name, other, words in cases:
            rank0 = {"--steps": "4", "--zero": "1", "--out": os.path.join(tmp, name.strip("-"))}
            rank1 = dict(rank0, **other)
            flat = lambda flags: [x for kv in flags.items() for x in kv]  # noqa: E731
            refused(name, base + flat(rank0), base + flat(rank1), words, failures)
            for d in (rank0["--out"], rank1["--out"]):
                if os.path.isdir(os.path.join(d, "checkpoints")) and os.listdir(os.path.join(d, "checkpoints")):
                    failures.append(f"{name}: a checkpoint was written under {d}")

        # The same command, but what it names differs: a rank's environment picking other CPU
        # kernels, or a rank's own copy of the data (its working directory's train.bin or
        # val.bin, init.bin or hs.jsonl). A validation set or --eval-task of another length used to
        # hang ZeRO-3 at the first eval; another init.bin trained on silently (at stage 0 each rank
        # its own model, at stage 3 a mix of both).
        dirs = [os.path.join(tmp, "wd0"), os.path.join(tmp, "wd1")]
        for i, d in enumerate(dirs):
            os.makedirs(d)
            sixnd_files.write_shard(os.path.join(d, "train.bin"), [(k * 31) % 256 for k in range(20000 if i == 0 else 19000)])
            sixnd_files.write_shard(os.path.join(d, "val.bin"), [(k * 7) % 256 for k in range(4000 if i == 0 else 3000)])
            shutil.copy(os.path.join(dirs[0], "train.bin") if i else data, os.path.join(d, "same_train.bin"))
            llmc_model(os.path.join(d, "init.bin"), i)
            with open(os.path.join(d, "hs.jsonl"), "w") as f:
                for k in range(2 + i):
                    f.write('{"ctx": "the cat", "endings": ["sat", "ran %d"], "label": 0}\n' % k)
        text = os.path.join(tmp, "text.txt")
        open(text, "w").write("the cat sat on the mat\n")
        tokenizer = os.path.join(tmp, "bytes.tok")
        subprocess.run([SIXND, "tokenizer", "train", "--input", text, "--vocab-size", "256", "--out", tokenizer],
                       check=True, capture_output=True)
        run = ([os.path.abspath(SIXND)] + base[1:base.index("--train-data")] + base[base.index("--train-data") + 2:] +
               ["--steps", "4", "--zero", "3"])
        envs = [("SIXND_CPU_ISA", ["-x", "SIXND_CPU_ISA=avx2"], ["--train-data", "same_train.bin"],
                 ["SIXND_CPU_ISA", "the CPU's kernels"]),
                ("--train-data's content", [], ["--train-data", "train.bin"], ["--train-data's shard contents"]),
                ("--val-data's content", [], ["--train-data", "same_train.bin", "--val-data", "val.bin", "--eval-every", "2"],
                 ["--val-data's shard contents"]),
                ("--init's content", [], ["--train-data", "same_train.bin", "--init", "llmc:init.bin"],
                 ["the parameters loaded"]),
                ("--eval-task's content", [], ["--train-data", "same_train.bin", "--tokenizer", tokenizer, "--eval-task",
                                               "hs.jsonl", "--eval-every", "2"], ["--eval-task's content"])]
        for i, (name, rank1_env, flags, words) in enumerate(envs):
            # An llm.c file brings its own shape: "--init random --model tiny --vocab-size 256" go.
            given = run[:run.index("--init")] + run[run.index("--vocab-size") + 2:] if "--init" in flags else run
            command = given + flags + ["--out", os.path.join(tmp, f"differs_{i}")]
            refused(name, ["-wdir", dirs[0]] + command, ["-wdir", dirs[1]] + rank1_env + command, words, failures)

        # A file that rank 1 alone cannot use (its node-local copy missing or damaged): every rank
        # stops at once, rank 1 naming the file. It used to be opened outside any agreement: rank 0
        # went on into a collective and the job ended only by the lone-failure abort, 30 s later.
        with open(os.path.join(dirs[1], "init.bin"), "r+b") as f:
            f.truncate(2000)
        os.remove(os.path.join(dirs[1], "same_train.bin"))
        with open(os.path.join(dirs[1], "val.bin"), "r+b") as f:
            f.write(b"junk")
        lone = [("--init's file", run[:run.index("--init")] + run[run.index("--vocab-size") + 2:] +
                 ["--train-data", "train.bin", "--init", "llmc:init.bin"], "init.bin"),
                ("--train-data's file", run + ["--train-data", "same_train.bin"], "same_train.bin"),
                ("--val-data's file", run + ["--train-data", "train.bin", "--val-data", "val.bin", "--eval-every", "2"],
                 "val.bin")]
        for i, (name, command, file) in enumerate(lone):
            out = os.path.join(tmp, f"lone_{i}")
            cmd = ([MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "1", "-wdir", dirs[0]] + command +
                   ["--out", out, ":", "-np", "1", "-wdir", dirs[1]] + command + ["--out", out])
            ended = sixnd_files.mpi_job_errors(cmd, TIMEOUT)
            print(f"{name} unusable on rank 1 alone: {ended}")
            if ended is None:
                failures.append(f"{name} unusable on rank 1 alone: hung past {TIMEOUT} s")
                continue
            rc, errors = ended
            if rc == 0 or not any(file in e for e in errors) or any("failed alone" in e for e in errors):
                failures.append(f"{name} unusable on rank 1 alone: exit {rc}, {errors}; wanted the ranks to stop "
                                "together, naming the file, without the lone-failure abort")
            if os.path.exists(out):
                failures.append(f"{name} unusable on rank 1 alone: {out} was left behind")

        same = os.path.join(tmp, "same")
        cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "2"] + base + ["--steps", "4", "--zero", "1",
                                                                                     "--out", same]
        r = subprocess.run(cmd, capture_output=True, text=True, env=sixnd_files.MPI_ENV, timeout=TIMEOUT)
        print(f"the same flags on both ranks: exit {r.returncode}")
        if r.returncode != 0:
            failures.append(f"the same flags: exit {r.returncode}: {r.stderr[-500:]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    print("FAILED" if failures else "PASSED")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
