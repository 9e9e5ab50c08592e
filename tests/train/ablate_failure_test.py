"""`sixnd ablate` when a run fails again: a run's train.log keeps the output of its earlier
attempts, so the error of a rerun that fails says what this attempt printed (here nothing: the
run is killed), not the error line an earlier attempt left in the log. And refused before any
run, with no --out left behind: a --seeds whose runs an ablation cannot count, and a '--' before
the base train flags (which dropped them: "--train-data is required")."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import bad_input  # noqa: E402
import tiny_text  # noqa: E402

# A launcher (--np 1 --mpirun THIS) that passes each run's --check through, fails the first run
# with sixnd train's error line, and kills itself in the next, printing nothing.
LAUNCHER = """#!/bin/sh
shift 2
for a in "$@"; do [ "$a" = "--check" ] && exec "$@"; done
if [ ! -e "$0.ran" ]; then : > "$0.ran"; echo "sixnd train: error: the first attempt's cause"; exit 1; fi
kill -9 $$
"""


def main():
    with tempfile.TemporaryDirectory() as tmp:
        p = tiny_text.make(tmp)
        flags = tiny_text.train_flags(p, steps=2)
        launcher = os.path.join(tmp, "launcher")
        with open(launcher, "w") as f:
            f.write(LAUNCHER)
        os.chmod(launcher, 0o755)
        out = os.path.join(tmp, "abl")
        cmd = ["ablate", "--out", out, "--vary", "lr=1e-3,2e-3", "--seeds", "1", "--np", "1", "--mpirun", launcher, *flags]
        huge = os.path.join(tmp, "huge")
        cases = [bad_input.Case("first_attempt_fails", cmd, ["train.log", "status 1", "the first attempt's cause"],
                                timeout=60),
                 bad_input.Case("rerun_killed", cmd, ["train.log", "status 137", "it printed nothing"], timeout=60),
                 bad_input.Case("seeds_past_int", ["ablate", "--out", huge, "--vary", "lr=1e-3,2e-3", "--seeds",
                                                   "2000000000", *flags],
                                ["--seeds", "2000000000 seeds x 2 variants", "more runs"], unchanged=[huge], timeout=60),
                 bad_input.Case("separator", ["ablate", "--out", huge, "--vary", "lr=1e-3,2e-3", "--", *flags],
                                ["--:", "not a flag", "after a '--'"], unchanged=[huge], timeout=60)]
        return bad_input.run_cases(cases, "sixnd ablate: a failing rerun's error, refusals before any run")


if __name__ == "__main__":
    sys.exit(main())
