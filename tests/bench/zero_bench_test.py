"""bench/zero_bench.py with a stand-in sixnd under mpirun: every rank may use every CPU the
benchmark may (Open MPI's default binding would pin each of 2 ranks to one core, so the 2- and
4-rank step times would run on different shares of the machine), and the footer's OpenMP threads
per rank are what sixnd train takes without OMP_NUM_THREADS: the CPUs a rank may use over the
ranks on the machine. A SIGTERM to the benchmark mid-run stops mpirun's ranks and removes its
temporary directory (they had trained on into it, a third of a gigabyte of checkpoints a run).
--help exits 0 and an unknown argument is refused as one. A token file that cannot be written
(the file-size limit standing in for a full disk) is one error line naming it (it was a traceback),
before mpirun runs.
Skips (77) without mpirun or numpy."""
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("SIXND_SOURCE") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "util"))
from checklist import check, verdict  # noqa: E402
import stand_in  # noqa: E402
from procs import running, sigterm_status  # noqa: E402

# Rank 0 writes a run log of the fields zero_bench reads; every rank records the CPUs it may use
# and the threads sixnd train would take there (cli/train.cpp's share_cores).
STUB = r'''#!/usr/bin/env python3
import json, os, sys, time
a = sys.argv
n = int(os.environ["OMPI_COMM_WORLD_SIZE"])
rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
cpus = len(os.sched_getaffinity(0))
threads = max(1, cpus // int(os.environ["OMPI_COMM_WORLD_LOCAL_SIZE"]))
with open(os.path.join(os.environ["STUB_DIR"], f"rank.{n}.{a[a.index('--zero') + 1]}.{rank}"), "w") as f:
    f.write(f"{cpus} {threads}")
if os.environ.get("STUB_TRAIN_ON"):  # a long run, writing into its --out
    out = a[a.index("--out") + 1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(os.environ["STUB_DIR"], f"pid.{rank}"), "w") as f:
        f.write(str(os.getpid()))
    for i in range(600):
        open(os.path.join(out, f"step.{rank}"), "w").write(str(i))
        time.sleep(0.1)
if rank == 0:
    mem = {"peak": 2**20, "params": 1, "grads": 1, "master": 1, "adam_m": 1, "adam_v": 1}
    with open(a[a.index("--log") + 1], "w") as f:
        f.write(json.dumps({"type": "header", "params": 1000}) + "\n")
        for i in range(6):
            f.write(json.dumps({"type": "step", "comm_bytes": 2000, "step_ms": 10.0, "memory_ranks": [mem]}) + "\n")
'''


def main():
    if not shutil.which("mpirun"):
        print("skipped: no mpirun")
        return 77
    try:
        import numpy  # noqa: F401
    except ImportError:
        print("skipped: no numpy")
        return 77
    with tempfile.TemporaryDirectory(prefix="sixnd_zero_bench_") as t:
        build = os.path.join(t, "build")
        stand_in.write_script(os.path.join(build, "sixnd"), STUB)
        ranks = os.path.join(t, "ranks")
        os.makedirs(ranks)
        env = dict(os.environ, STUB_DIR=ranks)
        env.pop("OMP_NUM_THREADS", None)
        # --- usage: --help succeeds; an unknown flag is named as one (it was taken for a build
        # directory: "--steps/sixnd: not built"), exit 2, before mpirun runs
        script = [sys.executable, os.path.join(SRC, "bench", "zero_bench.py")]
        r = subprocess.run(script + ["--help"], capture_output=True, text=True, env=env, timeout=60)
        check(r.returncode == 0 and "usage:" in r.stdout, f"--help: exit {r.returncode}")
        for args in (["--steps", "3"], [build, "extra"]):
            r = subprocess.run(script + args, capture_output=True, text=True, env=env, timeout=60)
            last = (r.stderr.strip().splitlines() or [""])[-1]
            check(r.returncode == 2 and "unrecognized arguments" in last and not os.listdir(ranks),
                  f"{args}: exit {r.returncode}, {last!r}")
        full = os.path.join(t, "full")
        os.makedirs(full)
        # 512 KiB: the 800 KB token file's write fails as on a full disk (Python ignores SIGXFSZ).
        r = subprocess.run(script + [build], capture_output=True, text=True, env=dict(env, TMPDIR=full), timeout=60,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 19, 1 << 19)))
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 1 and len(lines) == 1 and lines[0].startswith("zero_bench: ")
              and "train.bin: File too large" in lines[0] and not os.listdir(ranks) and not os.listdir(full),
              f"token file not written: exit {r.returncode}, {r.stderr.strip()[-300:]!r}, left {os.listdir(full)}")
        r = subprocess.run(script + [build], capture_output=True, text=True, env=env, timeout=300)
        print(r.stdout)
        check(r.returncode == 0, f"stand-in run: exit {r.returncode}, {r.stderr.strip()[-500:]!r}")
        cpus = len(os.sched_getaffinity(0))
        seen = {}
        for name in sorted(os.listdir(ranks)):
            n = int(name.split(".")[1])
            seen.setdefault(n, set()).add(tuple(map(int, open(os.path.join(ranks, name)).read().split())))
        check(sorted(seen) == [2, 4], f"ranks ran at 2 and 4: {sorted(seen)}")
        for n, got in sorted(seen.items()):
            check({c for c, _ in got} == {cpus}, f"{n} ranks: each may use all {cpus} CPUs: {sorted(got)}")
        m = re.search(r"OpenMP threads per rank: ([^;]*);", r.stdout)
        want = {n: {th for _, th in got} for n, got in seen.items()}
        check(m is not None and all(len(v) == 1 for v in want.values())
              and m.group(1).startswith(f"{min(want.get(2, {0}))} with 2 ranks, {min(want.get(4, {0}))} with 4"),
              f"footer's threads per rank {m.group(1) if m else None!r}, ranks took {want}")

        # --- SIGTERM mid-run
        for name in os.listdir(ranks):
            os.remove(os.path.join(ranks, name))
        tmp = os.path.join(t, "tmp")
        os.makedirs(tmp)
        p = subprocess.Popen([sys.executable, os.path.join(SRC, "bench", "zero_bench.py"), build],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env=dict(env, STUB_TRAIN_ON="1", TMPDIR=tmp))
        pid_files = [os.path.join(ranks, f"pid.{r}") for r in (0, 1)]
        deadline = time.monotonic() + 60
        while not all(os.path.exists(f) and os.path.getsize(f) for f in pid_files) and time.monotonic() < deadline:
            time.sleep(0.1)
        pids = [int(open(f).read()) for f in pid_files if os.path.exists(f) and os.path.getsize(f)]
        check(len(pids) == 2, f"the stand-in ranks started: {pids}")
        rc = sigterm_status(p)
        time.sleep(0.5)
        alive = [pid for pid in pids if running(pid)]
        for pid in alive:
            os.kill(pid, signal.SIGKILL)
        check(rc != 0, f"SIGTERM: exit {rc}")
        check(alive == [], f"SIGTERM: no rank left running: {alive}")
        check(not [x for x in os.listdir(tmp) if x.startswith("tmp")], f"SIGTERM: nothing left in TMPDIR: {os.listdir(tmp)}")
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
