"""The run log only ever ends in a complete record. A write the disk refuses (RLIMIT_FSIZE with
SIGXFSZ ignored) is one error line and a log cut back to its last whole record; a torn last line
(what a SIGKILL mid-write or an older sixnd leaves) is cut off, with one warning naming the file
and the bytes dropped, when `--resume latest` opens the log to append. Either way the resumed
log is one that `sixnd plan --check` accepts."""
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")
LIMIT = 60000  # the log of a few hundred steps; no checkpoint is due before the run ends


def limit_files():
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def whole_records(log):
    """None when every line of the log is a JSON record ending in a newline, else the fault."""
    data = open(log, "rb").read()
    if not data.endswith(b"\n"):
        return f"ends in a torn record: ...{data[-60:]!r}"
    for n, line in enumerate(data.decode().splitlines(), 1):
        try:
            json.loads(line)
        except ValueError:
            return f"line {n} is not a JSON record: {line[:80]}"
    return None


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        data, out, log = (os.path.join(tmp, n) for n in ("train.bin", "run", "run.jsonl"))
        sixnd_files.write_shard(data, [(i * 7) % 256 for i in range(100000)])

        def train(*extra, preexec_fn=None):
            cmd = [SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--max-seq-len", "32",
                   "--device", "cpu", "--dtype", "fp32", "--train-data", data, "--batch", "2", "--seq-len", "16",
                   "--steps", "5000", "--peak-tflops", "1", "--out", out, "--log", log, *extra]
            return subprocess.run(cmd, capture_output=True, text=True, env=ENV, preexec_fn=preexec_fn)

        def resumed(stop_at, what):
            r = train("--resume", "latest", "--stop-at", str(stop_at))
            fault = whole_records(log)
            if r.returncode != 0 or fault:
                failures.append(f"{what}: resume exit {r.returncode}, log: {fault}; {r.stderr.strip()[-300:]}")
            p = subprocess.run([SIXND, "plan", "--check", log], capture_output=True, text=True, env=ENV)
            print(f"{what}: resumed to step {stop_at}; plan --check exit {p.returncode}")
            if p.returncode != 0:
                failures.append(f"{what}: plan --check refuses the resumed log: {p.stderr.strip()[-300:]}")
            return r

        r = train("--stop-at", "20")
        if r.returncode != 0:
            return sixnd_files.report([f"first run failed: {r.stderr.strip()[-300:]}"], "the run log's last record")

        # The disk refuses a record: one error line, and the log cut back to whole records.
        r = train("--resume", "latest", preexec_fn=limit_files)
        errors = [x for x in r.stderr.splitlines() if "error" in x.lower()]
        size, fault = os.path.getsize(log), whole_records(log)
        print(f"log over {LIMIT} bytes: exit {r.returncode}, log {size} bytes; {errors[-1] if errors else ''}")
        if r.returncode != 1 or len(errors) != 1 or f"{log}: cannot write run log: File too large" not in errors[0]:
            failures.append(f"write fault: exit {r.returncode}, stderr: {r.stderr.strip()[-400:]}")
        if fault or size > LIMIT:
            failures.append(f"write fault: the log ({size} bytes) {fault}")
        resumed(40, "after a write fault")

        # A torn last line: cut off with one warning naming the file and the bytes.
        torn = '{"type":"step","step":41,"loss":3.1'
        open(log, "a").write(torn)
        r = resumed(60, "after a torn record")
        warns = [x for x in r.stderr.splitlines() if "torn" in x]
        print(f"torn record: {warns}")
        if len(warns) != 1 or log not in warns[0] or f"{len(torn)} bytes" not in warns[0]:
            failures.append(f"torn record: expected one warning naming {log} and {len(torn)} bytes, got {warns}")
    return sixnd_files.report(failures, "the run log's last record")


if __name__ == "__main__":
    sys.exit(main())
