"""SIGINT/SIGTERM/SIGHUP (a closed terminal)/SIGUSR1 (the one mpirun passes on as it is)/SIGPIPE
(its output's reader gone: `sixnd train | head`) during `sixnd train`: the run finishes the step,
writes a checkpoint, says how to resume and exits non-zero, and `--resume latest` continues from
the step after it; a second signal ends the process at once (exit 128 + signal). Under `nohup`
(SIGHUP ignored when the run starts) a hangup changes nothing. While a run writes a directory, a
second run on the same --out fails at once, naming the first one's pid."""
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
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")


def wait_for_steps(log, n, p, timeout=120):
    t0 = time.time()
    while len(sixnd_files.steps_logged(log)) < n:
        if p.poll() is not None or time.time() - t0 > timeout:
            return False
        time.sleep(0.05)
    return True


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "train.bin")
        sixnd_files.write_shard(data, [(i * 7) % 256 for i in range(100000)])

        def cmd(out, log, steps=100000, *extra, model="tiny"):
            return [SIXND, "train", "--init", "random", "--model", model, "--vocab-size", "256", "--max-seq-len", "64",
                    "--device", "cpu", "--dtype", "fp32", "--train-data", data, "--batch", "8", "--seq-len", "64",
                    "--steps", str(steps), "--peak-tflops", "1", "--out", out, "--log", log] + list(extra)

        # One signal: checkpoint, message, exit 1; then resume.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1):
            out, log = os.path.join(tmp, f"run_{sig.name}"), os.path.join(tmp, f"{sig.name}.jsonl")
            p = subprocess.Popen(cmd(out, log), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
            if not wait_for_steps(log, 2, p):
                failures.append(f"{sig.name}: the run did not start: {p.communicate()[1][-300:]}")
                continue
            p.send_signal(sig)
            _, err = p.communicate(timeout=120)
            done = sixnd_files.steps_logged(log)[-1]
            ck = os.path.join(out, "checkpoints", f"step-{done:08d}")
            print(f"{sig.name}: exit {p.returncode} after step {done}; {err.strip().splitlines()[-1]}")
            if p.returncode != 1 or f"interrupted by {sig.name} after step {done}" not in err or \
                    "--resume latest" not in err or not os.path.exists(os.path.join(ck, "DONE")):
                failures.append(f"{sig.name}: exit {p.returncode}, checkpoint {ck} present: "
                                f"{os.path.exists(ck)}; stderr: {err.strip()[-400:]}")
                continue
            rlog = os.path.join(tmp, f"{sig.name}_resume.jsonl")
            r = subprocess.run(cmd(out, rlog, done + 2, "--resume", "latest"), capture_output=True, text=True, env=ENV)
            if r.returncode != 0 or sixnd_files.steps_logged(rlog) != [done + 1, done + 2]:
                failures.append(f"{sig.name}: resume logged {sixnd_files.steps_logged(rlog)}, expected [{done + 1}, {done + 2}]: "
                                f"{r.stderr.strip()[-300:]}")

        nohup(cmd, tmp, failures)
        closed_output(cmd, tmp, failures)

        # A second run on the same --out while the first holds it. The d6 model's steps and
        # checkpoints take long enough that the second signal finds the first one being handled.
        out, log = os.path.join(tmp, "held"), os.path.join(tmp, "held.jsonl")
        p = subprocess.Popen(cmd(out, log, model="d6"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV)
        try:
            held(p, out, log, cmd, tmp, failures)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    return sixnd_files.report(failures, "signals and the run lock")


def nohup(cmd, tmp, failures):
    """Started with SIGHUP ignored, the run ignores a hangup, and still stops on SIGTERM."""
    out, log = os.path.join(tmp, "nohup"), os.path.join(tmp, "nohup.jsonl")
    p = subprocess.Popen(cmd(out, log), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV,
                         preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    try:
        if not wait_for_steps(log, 2, p):
            failures.append("nohup: the run did not start")
            return
        p.send_signal(signal.SIGHUP)
        n = len(sixnd_files.steps_logged(log))
        if not wait_for_steps(log, n + 20, p):
            failures.append(f"nohup: a hangup stopped the run (exit {p.poll()})")
            return
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=120)
        print(f"nohup: ran on after SIGHUP; SIGTERM: exit {p.returncode}")
        if p.returncode != 1 or "interrupted by SIGTERM" not in err:
            failures.append(f"nohup: SIGTERM after an ignored SIGHUP: exit {p.returncode}: {err.strip()[-300:]}")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def closed_output(cmd, tmp, failures):
    """The pipe stderr goes to closes after the first line: the next progress line's SIGPIPE stops
    the run with a checkpoint and the stop in the run log (exit 1), as SIGHUP does; the writes to
    the closed pipe after it are not a second signal."""
    out, log = os.path.join(tmp, "closed"), os.path.join(tmp, "closed.jsonl")
    p = subprocess.Popen(cmd(out, log), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV)
    try:
        first = p.stderr.readline()
        p.stderr.close()
        p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        failures.append("closed stderr: still running after 120 s")
        return
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    done = sixnd_files.steps_logged(log)[-1] if sixnd_files.steps_logged(log) else None
    ck = os.path.join(out, "checkpoints", f"step-{done:08d}") if done else ""
    stops = [json.loads(line) for line in open(log) if '"event":"stop"' in line] if os.path.exists(log) else []
    print(f"closed stderr after {first.strip()[:40]!r}: exit {p.returncode} after step {done}; stop records {stops}")
    if p.returncode != 1 or not done or not os.path.exists(os.path.join(ck, "DONE")) or \
            [(s["reason"], s.get("signal")) for s in stops] != [("signal", signal.SIGPIPE)]:
        failures.append(f"closed stderr: exit {p.returncode}, last step {done}, checkpoint {ck or 'none'} "
                        f"present: {bool(ck) and os.path.exists(ck)}, stop records {stops}")


def held(p, out, log, cmd, tmp, failures):
    if wait_for_steps(log, 1, p):
        t0 = time.time()
        try:
            r = subprocess.run(cmd(out, os.path.join(tmp, "second.jsonl"), 2), capture_output=True, text=True,
                               env=ENV, timeout=60)
        except subprocess.TimeoutExpired:
            failures.append("second run on a held --out: still running after 60 s")
            return
        secs = time.time() - t0
        print(f"second run on a held --out: exit {r.returncode} in {secs:.1f} s: {r.stderr.strip()}")
        if r.returncode != 1 or f"in use by another sixnd train (pid {p.pid})" not in r.stderr or secs > 20:
            failures.append(f"second run: exit {r.returncode} after {secs:.1f} s: {r.stderr.strip()[-300:]}")
        if os.path.exists(os.path.join(tmp, "second.jsonl")):
            failures.append("the refused second run wrote its log")
        # Two signals back to back: out at once, 128 + SIGTERM.
        p.send_signal(signal.SIGTERM)
        time.sleep(0.3)  # two pending SIGTERMs would merge into one
        p.send_signal(signal.SIGTERM)
        try:
            p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            failures.append("two SIGTERMs: still running after 60 s")
            return
        print(f"two signals: exit {p.returncode}")
        if p.returncode != 128 + signal.SIGTERM:
            failures.append(f"two SIGTERMs: exit {p.returncode}, expected {128 + signal.SIGTERM}")
    else:
        failures.append("held: the run did not start")


if __name__ == "__main__":
    sys.exit(main())
