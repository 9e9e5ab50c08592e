"""`sixnd report` under a locale whose encoding is not UTF-8 (LC_ALL=C with Python's C-locale
coercion and UTF-8 mode off, as on a system without a UTF-8 locale): the plotting script read
report_input.json and wrote report.md in the locale's encoding, so a run under a directory named
in other than ASCII ('ré') failed with UnicodeDecodeError; every file sixnd and the script share
is UTF-8 (report.html declares it)."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
import tiny_text  # noqa: E402

RECORDS = [{"type": "header", "config": {}, "model": {}},
           {"type": "step", "step": 1, "loss": 3.0, "tokens": 64, "step_ms": 10.0, "grad_norm": 1.0, "lr": 1e-3},
           {"type": "step", "step": 2, "loss": 2.5, "tokens": 128, "step_ms": 10.0, "grad_norm": 1.0, "lr": 1e-3}]


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = os.path.join(tmp, "ré")
        os.makedirs(runs)
        log, out = os.path.join(runs, "run.jsonl"), os.path.join(tmp, "report")
        with open(log, "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(r) + "\n" for r in RECORDS))
        env = dict(tiny_text.ENV, LC_ALL="C", LANG="C", PYTHONCOERCECLOCALE="0", PYTHONUTF8="0")
        r = subprocess.run([tiny_text.SIXND, "report", log, "--out", out], capture_output=True, env=env)
        err = r.stderr.decode("utf-8", "replace").strip()
        print(f"exit {r.returncode}; {err.splitlines()[-1] if err else 'no stderr'}")
        if r.returncode != 0:
            failures.append(f"sixnd report under LC_ALL=C failed ({r.returncode}): {err[-400:]}")
        else:
            with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
                if "ré" not in f.read():
                    failures.append("report.md does not name the run's directory 'ré' in UTF-8")
    return sixnd_files.report(failures, "sixnd report under a locale that is not UTF-8")


if __name__ == "__main__":
    sys.exit(main())
