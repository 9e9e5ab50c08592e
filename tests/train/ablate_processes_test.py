"""`sixnd ablate` rerun under another --np: each process of a run takes --batch rows, so the runs
it would add train on other batches than the finished ones, and the table would put the
difference down to the knob. The rerun is refused, naming the process count, with nothing
written; another launcher command with the same --np resumes. (Before, a rerun without --np
after one with --np 2 trained the rest directly and tabled them beside the others.) The
launcher here drops its -np N and starts the run itself, so no mpirun is needed."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
import tiny_text  # noqa: E402

LAUNCHER = """#!/bin/sh
shift 2
exec "$@"
"""


def tree(path):
    return sorted((os.path.relpath(os.path.join(d, f), path), os.stat(os.path.join(d, f)).st_mtime_ns)
                  for d, _, files in os.walk(path) for f in files)


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        p = tiny_text.make(tmp)
        launchers = []
        for name in ("launcher", "other_launcher"):
            launchers.append(os.path.join(tmp, name))
            with open(launchers[-1], "w") as f:
                f.write(LAUNCHER)
            os.chmod(launchers[-1], 0o755)
        out = os.path.join(tmp, "ab")
        cmd = ["ablate", "--out", out, "--vary", "lr=3e-3,1e-3", "--seeds", "1", *tiny_text.train_flags(p, steps=2)]
        tiny_text.sixnd(*cmd, "--np", "2", "--mpirun", launchers[0])
        before = tree(out)
        for other in ([], ["--np", "1", "--mpirun", launchers[0]], ["--np", "3", "--mpirun", launchers[0]]):
            r = tiny_text.sixnd(*cmd, *other, check=False)
            errors = [x for x in r.stderr.splitlines() if "error" in x]
            print(f"rerun with {other or 'no --np'}: exit {r.returncode}, {errors}")
            if r.returncode != 1 or len(errors) != 1 or out not in errors[0] or "processes" not in errors[0]:
                failures.append(f"a rerun with {other or 'no --np'} after --np 2: exit {r.returncode}, {r.stderr.strip()[-400:]}")
            if tree(out) != before:
                failures.append(f"the refused rerun with {other or 'no --np'} changed {out}")
        r = tiny_text.sixnd(*cmd, "--np", "2", "--mpirun", launchers[1], check=False)
        if r.returncode != 0 or '"skipped":2' not in r.stdout:
            failures.append(f"a rerun with --np 2 under another launcher command: exit {r.returncode}, "
                            f"{r.stdout.strip()[-200:]} {r.stderr.strip()[-400:]}")
    return sixnd_files.report(failures, "an ablation is resumed under its own --np only")


if __name__ == "__main__":
    sys.exit(main())
