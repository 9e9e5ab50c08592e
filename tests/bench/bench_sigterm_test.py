"""A SIGTERM to a benchmark script stops the command it is running, not just the script: a
stand-in (sleeping, its pid recorded) is gone once the script has exited, with a non-zero status.
It had run on (for minutes at real sizes, busying the cores that the next measurement shares):
model_bench under bench/cpu_model_bench.py, sixnd's tokenizer training under
bench/data/prepare_bench.sh and under bench/tokenizer/bench_tokenizer.sh (there inside
/usr/bin/time, which a SIGTERM ends without its command). The tokenizer benchmark's sentencepiece
and apt-get are stand-ins on the PATH (nothing is installed)."""
import os
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

STUB = r'''#!/usr/bin/env python3
import os, time
with open(os.environ["STUB_PID"], "w") as f:
    f.write(str(os.getpid()))
time.sleep(300)
'''


def stopped_mid_run(cmd, pid_file, env):
    """(exit status, the stand-in's pid, whether it still runs) after a SIGTERM to CMD once the
    stand-in has started."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 60
    while not (os.path.exists(pid_file) and os.path.getsize(pid_file)) and time.monotonic() < deadline:
        time.sleep(0.1)
    pid = int(open(pid_file).read()) if os.path.exists(pid_file) and os.path.getsize(pid_file) else None
    rc = sigterm_status(p)
    deadline = time.monotonic() + 5
    while pid and running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = bool(pid) and running(pid)
    if alive:
        os.kill(pid, signal.SIGKILL)
    return rc, pid, alive


def main():
    with tempfile.TemporaryDirectory(prefix="sixnd_bench_sigterm_") as t:
        build = os.path.join(t, "build")
        stand_in.write_script(os.path.join(build, "bench", "model_bench"), STUB)
        pid_file = os.path.join(t, "pid")
        env = dict(os.environ, OMP_NUM_THREADS="1", STUB_PID=pid_file)
        env.pop("SIXND_CPU_ISA", None)
        cmd = [sys.executable, os.path.join(SRC, "bench", "cpu_model_bench.py"), build, "--shapes", "demo",
               "--modes", "fwdbwd", "--no-recompute"]
        sixnd = stand_in.write_script(os.path.join(t, "sixnd"), STUB)
        stubs = os.path.join(t, "stubs")
        for name in ("apt-get", "spm_train"):
            stand_in.write_script(os.path.join(stubs, name), "#!/bin/sh\nexit 100\n")
        work = os.path.join(t, "work")
        os.makedirs(work)
        with open(os.path.join(work, "english.txt"), "w") as f:
            f.write("Some English text for the stand-in corpus.\n")
        shell = dict(env, PATH=stubs + os.pathsep + env["PATH"], WORK=work, VOCABS="300",
                     SIXND_SHARED=os.environ.get("SIXND_SHARED") or os.path.join(SRC, "..", "shared"))
        for name, cmd, run_env in (
                ("cpu_model_bench.py", cmd, env),
                ("prepare_bench.sh", ["bash", os.path.join(SRC, "bench", "data", "prepare_bench.sh"), sixnd,
                                      os.path.join(t, "data.md")], env),
                ("bench_tokenizer.sh", ["bash", os.path.join(SRC, "bench", "tokenizer", "bench_tokenizer.sh"), sixnd,
                                        os.path.join(t, "tokenizer.md")], shell)):
            if os.path.exists(pid_file):
                os.remove(pid_file)
            rc, pid, alive = stopped_mid_run(cmd, pid_file, run_env)
            check(pid is not None, f"{name}: the stand-in started")
            check(rc != 0, f"{name}: SIGTERM: exit {rc}")
            check(not alive, f"{name}: SIGTERM: the stand-in {pid} not left running")
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
