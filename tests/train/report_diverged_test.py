"""`sixnd report` of a run that diverged says so in its table row, as an ablation's row counts its
diverged seeds (the row's losses are '-' either way, and '-' alone read as numbers not logged),
and a run that diverged at its first step (no step record) draws plots that say they have nothing
to draw, without matplotlib's warnings of legends without entries on stderr."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "scripts"))
import report_plots  # noqa: E402
import sixnd_files  # noqa: E402
import tiny_text  # noqa: E402

HEADER = {"type": "header", "config": {}, "model": {}}


def step(n, loss):
    return {"type": "step", "step": n, "loss": loss, "tokens": 64 * n, "step_ms": 10.0, "grad_norm": 1.0, "lr": 1e-3}


def event(kind, n, **fields):
    return {"type": "event", "event": kind, "step": n, **fields}


def main():
    failures = []
    logs = {
        "at_once": ([HEADER, event("stop", 1, reason="non_finite_parameters", last_checkpoint="")], "1 (1 diverged)"),
        "bad_steps": ([HEADER, step(1, 3.0), step(2, 2.5),
                       event("skip", 3, loss=None, grad_norm=None, reason="non_finite", consecutive=1),
                       event("stop", 3, reason="max_bad_steps", last_checkpoint="")], "1 (1 diverged)"),
        "healthy": ([HEADER, step(1, 3.0), step(2, 2.5)], "1"),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, (records, want) in logs.items():
            log, out = os.path.join(tmp, name + ".jsonl"), os.path.join(tmp, "report_" + name)
            with open(log, "w") as f:
                f.write("".join(json.dumps(r) + "\n" for r in records))
            r = subprocess.run([tiny_text.SIXND, "report", log, "--out", out], capture_output=True, text=True,
                               env=tiny_text.ENV)
            if r.returncode != 0:
                failures.append(f"{name}: sixnd report failed ({r.returncode}): {r.stderr.strip()[-400:]}")
                continue
            if r.stderr.strip():
                failures.append(f"{name}: sixnd report wrote to stderr: {r.stderr.strip()[-400:]}")
            with open(os.path.join(out, "report_input.json")) as f:
                head, rows = report_plots.table_rows(json.load(f)["sources"])
            seeds = rows[0][head.index("seeds")]
            print(f"{name}: seeds cell '{seeds}'")
            if seeds != want:
                failures.append(f"{name}: the table row's seeds cell is '{seeds}', expected '{want}'")
    return sixnd_files.report(failures, "sixnd report marks a diverged run and draws one without steps quietly")


if __name__ == "__main__":
    sys.exit(main())
