"""`sixnd train --profile N` leaves the run's first step, which allocates, out of the profile
whenever another step follows (--help: "over N steps (after the first)"), also where N covers
the whole run: --steps 3 --profile 3 once averaged step 1 in and read several times the ms/step
of steps 2-3. A one-step run profiles its only step. A run stopped by a signal writes the profile of the steps
it got through (it wrote none); one stopped before any profiled step ended writes none and warns
of nothing. Steps are counted; no time is compared."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]


def command(tmp, name, steps, profile):
    out, log = os.path.join(tmp, name), os.path.join(tmp, name + ".jsonl")
    return out, log, [SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--max-seq-len", "32",
                      "--device", "cpu", "--dtype", "fp32", "--train-data", os.path.join(tmp, "train.bin"), "--batch", "2",
                      "--seq-len", "16", "--checkpoint-every", "0", "--out", out, "--log", log, "--steps", str(steps),
                      "--profile", str(profile)]


def profiled(tmp, steps, profile, failures, want_steps, want_first):
    name = f"s{steps}p{profile}"
    out, log, cmd = command(tmp, name, steps, profile)
    sixnd_files.run_train(cmd, name, log)
    p = json.load(open(os.path.join(out, "profile.json")))
    got = (p["steps"], p["first_step"])
    if got != (want_steps, want_first):
        failures.append(f"--steps {steps} --profile {profile}: profiled {got[0]} steps from step {got[1]}, "
                        f"expected {want_steps} from step {want_first}")


def stopped(tmp, failures):
    out, log, cmd = command(tmp, "stopped", 1000000, 2)
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1"))
    try:
        end = time.time() + 120
        while len(sixnd_files.steps_logged(log)) < 4 and p.poll() is None and time.time() < end:
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        p.wait(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    path = os.path.join(out, "profile.json")
    got = (json.load(open(path))["steps"], json.load(open(path))["first_step"]) if os.path.exists(path) else None
    events = [json.loads(x)["event"] for x in open(log) if '"event"' in x] if os.path.exists(log) else []
    print(f"stopped by SIGINT: exit {p.returncode}, profile {got}, events {events}")
    if p.returncode != 1 or got != (2, 2) or "profile" not in events:
        failures.append(f"a run stopped by SIGINT: exit {p.returncode}, profile (steps, first) {got}, events {events}")


def stopped_before_the_window(tmp, failures):
    """--max-bad-steps 1 stops the run at step 2, the first of the window, which no profiled step
    ended: no profile, and no warning calling the steps it never ran skipped."""
    out, log, cmd = command(tmp, "bad", 5, 2)
    r = subprocess.run(cmd + ["--lr", "1e30", "--max-bad-steps", "1"], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1"))
    warned = [x for x in r.stderr.splitlines() if "--profile" in x]
    print(f"stopped at step 2 by --max-bad-steps: exit {r.returncode}, profile warnings {warned}")
    if r.returncode != 1 or warned or os.path.exists(os.path.join(out, "profile.json")):
        failures.append(f"a run stopped before any profiled step ended: exit {r.returncode}, warnings {warned}, "
                        f"profile.json {os.path.exists(os.path.join(out, 'profile.json'))}")


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sixnd_files.write_repeating_shard(os.path.join(tmp, "train.bin"))
        profiled(tmp, 3, 3, failures, 2, 2)
        profiled(tmp, 3, 5, failures, 2, 2)
        profiled(tmp, 4, 2, failures, 2, 2)
        profiled(tmp, 1, 1, failures, 1, 1)
        stopped(tmp, failures)
        stopped_before_the_window(tmp, failures)
    return sixnd_files.report(failures, "the profile leaves the first step out")


if __name__ == "__main__":
    sys.exit(main())
