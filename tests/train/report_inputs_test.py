"""How `sixnd report` takes its inputs. One that is no run log, run directory or ablation
directory, or that cannot be looked at, is one error line naming the input and what it is ("a
FIFO", "a character device": the drawing script reads a log a second time, which a pipe cannot
give) or why it cannot be looked at (a name too long), not "no such run log" for something that
exists, nor the library's "filesystem error: status"; and no report is written. A run given as
"." or "DIR/.." is named by the directory that is, not "." or ".."."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
from bad_input import Case, run_cases  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")


def refused(tmp):
    fifo = os.path.join(tmp, "pipe.jsonl")
    os.mkfifo(fifo)
    long_name = os.path.join(tmp, "n" * 300)
    out = os.path.join(tmp, "out")
    cases = [
        Case("a FIFO", [fifo], [fifo, "is a FIFO, not a run log, run directory or ablation directory"]),
        Case("a device", ["/dev/null"], ["/dev/null", "is a character device, not a run log"]),
        Case("a name too long", [long_name], [long_name, "cannot be looked at: File name too long"]),
        Case("a name too long on the way", [os.path.join(long_name, "run.jsonl")], ["cannot be looked at: File name too long"]),
    ]
    for c in cases:
        c.args = ["report"] + c.args + ["--out", out]
        c.unchanged = [out]
    return run_cases(cases, "sixnd report: inputs that are no run log, or cannot be looked at")


def names(tmp, failures):
    run = os.path.join(tmp, "my-run")
    os.makedirs(os.path.join(run, "sub"))
    records = [{"type": "header", "config": {}, "model": {}},
               {"type": "step", "step": 1, "loss": 3.0, "tokens": 64, "step_ms": 10.0, "grad_norm": 1.0, "lr": 1e-3}]
    with open(os.path.join(run, "run.jsonl"), "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records))
    for i, (cwd, arg) in enumerate(((run, "."), (tmp, os.path.join("my-run", ".")), (os.path.join(run, "sub"), ".."))):
        out = os.path.join(tmp, f"report{i}")
        r = subprocess.run([SIXND, "report", arg, "--out", out], cwd=cwd, capture_output=True, text=True, env=ENV)
        if r.returncode != 0:
            failures.append(f"report {arg} from {cwd}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
            continue
        with open(os.path.join(out, "report_input.json")) as f:
            name = json.load(f)["sources"][0]["name"]
        print(f"report {arg} from {cwd}: named '{name}'")
        if name != "my-run":
            failures.append(f"report {arg} from {cwd}: the run is named '{name}', not my-run")


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        if refused(tmp) != 0:
            failures.append("refused inputs")
        names(tmp, failures)
    return sixnd_files.report(failures, "sixnd report: its inputs refused or named")


if __name__ == "__main__":
    sys.exit(main())
