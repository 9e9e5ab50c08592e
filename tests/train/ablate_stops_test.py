"""`sixnd ablate` with variants that stop for good in the ways sixnd train has besides
--max-bad-steps: a spike after --max-rollbacks rollbacks, and an update that makes the parameters
non-finite. A rerun would stop the same way, so each is a result, counted as diverged with no
final losses, not a failure that aborts the ablation (before, only --max-bad-steps was, and
these ended it with an error a rerun repeated). --out is given with a trailing '/': the paths
printed under it have no doubled '/'."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
import tiny_text  # noqa: E402

# An injected learning-rate spike at step 12 is rolled back; a junk batch at step 16 spikes again,
# which --max-rollbacks 1 does not roll back but stops at (3 does).
SPIKES = ["--steps", "20", "--eval-every", "10", "--spike-window", "8", "--spike-z-loss", "3", "--schedule", "constant",
          "--inject-lr-spike", "12:300", "--on-spike", "rollback", "--snapshot-every", "3", "--rollback-steps", "2",
          "--rollback-skip-batches", "0", "--inject-junk-batch", "16", "--grad-clip", "0"]


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        p = tiny_text.make(tmp)
        flags = tiny_text.train_flags(p)
        for f in ("--steps", "--eval-every"):
            i = flags.index(f)
            del flags[i:i + 2]
        out = os.path.join(tmp, "stops")
        cmd = ["ablate", "--out", out + "/", "--vary", "max-rollbacks=3,1", "--vary", "lr=3e-3,1e38", "--seeds", "1",
               *flags, *SPIKES]
        r = tiny_text.sixnd(*cmd, check=False)
        if r.returncode != 0:
            return sixnd_files.report([f"the ablation failed ({r.returncode}): {r.stderr.strip()[-600:]}"],
                                      "runs that stop for good are diverged results")
        for says in ("max-rollbacks=1 seed 1337: diverged (stopped at --max-rollbacks",
                     "lr=1e38 seed 1337: diverged (stopped: an update made the parameters non-finite"):
            if says not in r.stderr:
                failures.append(f"no warning '{says}': {r.stderr.strip()[-600:]}")
        summary = json.loads(r.stdout.strip().splitlines()[-1])
        if (summary["results"], summary["csv"]) != (out + "/results.json", out + "/results.csv"):
            failures.append(f"paths printed for --out {out}/: {summary}")
        res = json.load(open(os.path.join(out, "results.json")))
        got = {v["name"]: (v["diverged"], v["runs"][0]["final_train_loss"], v["metrics"]["val_loss"]["n"],
                           v.get("val_loss_diff")) for v in res["variants"]}
        print(f"diverged, final train loss, val_loss n, diff per variant: {got}")
        base = got["base"]
        if base[0] != 0 or base[1] is None or base[2] != 1:
            failures.append(f"the base (--max-rollbacks 3 rolls back twice and finishes): {base}")
        for name in ("max-rollbacks=1", "lr=1e38"):
            if got[name] != (1, None, 0, None):
                failures.append(f"{name} is not counted as diverged with no final losses: {got[name]}")
        r = tiny_text.sixnd(*cmd, check=False)
        summary = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {}
        if (summary.get("ran"), summary.get("skipped")) != (0, 3):
            failures.append(f"the same command again: exit {r.returncode}, {summary}, {r.stderr.strip()[-300:]}")
    return sixnd_files.report(failures, "runs that stop for good are diverged results")


if __name__ == "__main__":
    sys.exit(main())
