"""`sixnd ablate` and signals, launchers and base flags. Ctrl-C (SIGINT to the whole process group,
as a terminal sends it) and a SIGTERM sent to sixnd ablate alone each reach the run in flight
once: it stops with a checkpoint (never "exiting now, without a checkpoint"), and ablate waits
for it, then exits non-zero with one line saying how to resume; the same command then resumes
that run from its checkpoint. Under a launcher (`--np`) the run in flight gets Ctrl-C as SIGUSR1:
mpirun passes SIGINT and SIGTERM on as SIGTERM and kills the ranks a second later, before a step
of any size ends (a stand-in that kills at once on them stands for it here). `--np` without `--mpirun` starts the runs under `mpirun` (a
stand-in on PATH here records how it was called). A base flag that gives a varied knob another
value than its --vary's first is overruled by it, with one warning line."""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import bad_input  # noqa: E402
import sixnd_files  # noqa: E402
import tiny_text  # noqa: E402


# Open MPI's mpirun as its ranks see it, for a step longer than its one-second grace: SIGUSR1
# passed on as it is, SIGINT or SIGTERM the end of the ranks. Its first two arguments are -np N.
MPIRUN_LIKE = """#!/bin/bash
shift 2
"$@" &
child=$!
trap 'kill -USR1 $child' USR1
trap 'kill -KILL $child' INT TERM
while :; do
  wait $child
  rc=$?
  kill -0 $child 2>/dev/null || exit $rc
done
"""


def checkpoints(run):
    return sorted(int(os.path.basename(d)[5:]) for d in glob.glob(os.path.join(run, "checkpoints", "step-*"))
                  if os.path.exists(os.path.join(d, "DONE")))


def interrupt(cmd, run, after, send, what, failures):
    """Starts cmd in a session of its own, sends a signal once `run` has a checkpoint after step
    `after`, and checks how ablate and the run ended. Returns the newest checkpoint step, or None."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=tiny_text.ENV,
                            start_new_session=True)
    t0 = time.time()
    while proc.poll() is None and max(checkpoints(run), default=0) <= after and time.time() - t0 < 300:
        time.sleep(0.01)
    if proc.poll() is not None:
        failures.append(f"{what}: the ablation ended (exit {proc.returncode}) before it could be interrupted")
        return None
    send(proc)
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        failures.append(f"{what}: sixnd ablate did not end within 120 s of the signal")
        return None
    log = open(os.path.join(run, "train.log")).read()
    errors = [x for x in err.splitlines() if "error" in x]
    print(f"{what}: exit {proc.returncode}; {errors[-1] if errors else err.strip()[-300:]}")
    if proc.returncode == 0 or len(errors) != 1 or "stopped by" not in errors[0] or \
            "same command again to resume" not in errors[0]:
        failures.append(f"{what}: exit {proc.returncode}, stderr {err.strip()[-500:]}")
    if "without a checkpoint" in log or "writing a checkpoint" not in log:
        failures.append(f"{what}: the run did not stop with a checkpoint: {log.strip()[-500:]}")
    if os.path.exists(os.path.join(run, "DONE")):
        failures.append(f"{what}: the interrupted run is marked finished")
    return max(checkpoints(run), default=None)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        p = tiny_text.make(tmp)
        out = os.path.join(tmp, "abl")
        cmd = [tiny_text.SIXND, "ablate", "--out", out, "--vary", "lr=3e-3,6e-3", "--seeds", "1",
               *tiny_text.train_flags(p, steps=400), "--checkpoint-every", "5"]
        base = os.path.join(out, "runs", "base", "seed-1337")
        at = interrupt(cmd, base, 0, lambda proc: os.killpg(proc.pid, signal.SIGINT), "Ctrl-C to the process group", failures)
        # SIGTERM to sixnd ablate alone (kill PID): passed on to the run.
        again = interrupt(cmd, base, at or 0, lambda proc: proc.send_signal(signal.SIGTERM), "SIGTERM to sixnd ablate",
                          failures)
        r = subprocess.run(cmd, capture_output=True, text=True, env=tiny_text.ENV)
        if r.returncode != 0:
            failures.append(f"the same command after the interruptions: {r.stderr.strip()[-500:]}")
        elif again is not None:
            headers = [json.loads(x) for x in open(os.path.join(base, "run.jsonl")) if '"header"' in x]
            print(f"resumed: {[h.get('resumed_from') for h in headers]}")
            if f"resuming from step {again}" not in r.stderr or not headers[-1].get("resumed_from", "").endswith(
                    f"step-{again:08d}"):
                failures.append(f"the rerun did not resume the base run from step {again}: {r.stderr.strip()[-500:]}")

        # Ctrl-C under a launcher: the run stops with a checkpoint (SIGINT passed on was its end).
        launcher = os.path.join(tmp, "mpirun_like")
        with open(launcher, "w") as f:
            f.write(MPIRUN_LIKE)
        os.chmod(launcher, 0o755)
        out_np = os.path.join(tmp, "abl_np")
        cmd_np = [tiny_text.SIXND, "ablate", "--out", out_np, "--vary", "lr=3e-3,6e-3", "--seeds", "1", "--np", "2",
                  "--mpirun", launcher, *tiny_text.train_flags(p, steps=400), "--checkpoint-every", "5"]
        interrupt(cmd_np, os.path.join(out_np, "runs", "base", "seed-1337"), 0,
                  lambda proc: os.killpg(proc.pid, signal.SIGINT), "Ctrl-C under a launcher (--np)", failures)

        # --np without --mpirun: `mpirun` from PATH, as --help says.
        fake = os.path.join(tmp, "bin")
        os.makedirs(fake)
        calls = os.path.join(tmp, "mpirun_calls")
        open(os.path.join(fake, "mpirun"), "w").write(f'#!/bin/sh\necho "$@" >> {calls}\nshift 2\nexec "$@"\n')
        os.chmod(os.path.join(fake, "mpirun"), 0o755)
        env = dict(tiny_text.ENV, PATH=fake + os.pathsep + os.environ["PATH"])
        r = subprocess.run([tiny_text.SIXND, "ablate", "--out", os.path.join(tmp, "np"), "--vary", "recompute=none,full",
                            "--seeds", "1", "--np", "2", *tiny_text.train_flags(p, steps=2)],
                           capture_output=True, text=True, env=env)
        called = open(calls).read().splitlines() if os.path.exists(calls) else []
        print(f"--np 2 without --mpirun: exit {r.returncode}, mpirun called {len(called)} times")
        if r.returncode != 0 or len(called) != 4 or not all(c.startswith("-np 2 ") for c in called):
            failures.append(f"--np 2 without --mpirun: exit {r.returncode}, calls {called}, {r.stderr.strip()[-400:]}")

        # A base flag naming a varied knob: overruled by the --vary's first value, in one warning line.
        out = os.path.join(tmp, "overruled")
        r = tiny_text.sixnd("ablate", "--out", out, "--vary", "lr=1e-3,2e-3", "--seeds", "1",
                            *tiny_text.train_flags(p, steps=2), check=False)  # --lr 3e-3
        warns = [x for x in r.stderr.splitlines() if "overruled" in x]
        header = json.loads(open(os.path.join(out, "runs", "base", "seed-1337", "run.jsonl")).readline()) \
            if r.returncode == 0 else {}
        print(f"--lr 3e-3 with --vary lr=1e-3,2e-3: {warns}")
        if r.returncode != 0 or len(warns) != 1 or "--lr 3e-3" not in warns[0] or "1e-3" not in warns[0] or \
                abs(header["config"]["lr"] - 1e-3) > 1e-9:
            failures.append(f"a base flag overruled by --vary: exit {r.returncode}, warnings {warns}, "
                            f"{r.stderr.strip()[-400:]}")

        cases = [bad_input.Case("empty_mpirun", ["ablate", "--out", os.path.join(tmp, "b3"), "--vary", "lr=3e-3,2e-3",
                                                 "--np", "2", "--mpirun", " ", *tiny_text.train_flags(p, steps=2)],
                                ["--mpirun", "empty"], unchanged=[os.path.join(tmp, "b3")])]
        if bad_input.run_cases(cases, "sixnd ablate --mpirun") != 0:
            failures.append("bad input cases failed")
    return sixnd_files.report(failures, "sixnd ablate: signals reach the run once, --mpirun's default, base flags")


if __name__ == "__main__":
    sys.exit(main())
