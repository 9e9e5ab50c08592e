"""A run resumed into a new --out (from another run's checkpoint) has that checkpoint as the state
before its first steps: a spike before the new run's own first checkpoint names it in its report
(checkpoint_before, and replay runs from it), and --on-spike rollback returns to it instead of
finding nothing to roll back to. Once the new run has saved, its own checkpoints come first."""
import json
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, OMP_NUM_THREADS="1", ASAN_OPTIONS="detect_leaks=0")


def run(args, check=True):
    r = subprocess.run([SIXND] + args, capture_output=True, text=True, env=ENV, timeout=300)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "train.bin")
        rng = random.Random(1)
        sixnd_files.write_shard(data, [rng.randrange(101) for _ in range(20000)])
        common = ["train", "--init", "random", "--model", "tiny", "--seed", "5", "--device", "cpu", "--dtype", "fp32",
                  "--train-data", data, "--shuffle", "off", "--batch", "4", "--seq-len", "16", "--steps", "20", "--lr", "3e-3",
                  "--schedule", "constant", "--warmup", "2", "--peak-tflops", "1", "--spike-window", "8",
                  "--checkpoint-every", "5", "--keep-last", "0"]
        base = os.path.join(tmp, "base")
        run(common + ["--stop-at", "10", "--out", base, "--log", base + ".jsonl"])
        from_ck = os.path.join(base, "checkpoints", "step-00000010")

        # warn: the spike at step 13 comes before the new run's first checkpoint (15).
        cont = os.path.join(tmp, "cont")
        run(common + ["--resume", from_ck, "--inject-lr-spike", "12:100", "--out", cont, "--log", cont + ".jsonl"])
        rep_path = os.path.join(cont, "spikes", "step-0000013.json")
        if not os.path.exists(rep_path):
            failures.append("no spike report at step 13 (the injected LR did not spike)")
        else:
            r = json.load(open(rep_path))["run"]
            if r["checkpoint_before"] != from_ck:
                failures.append(f"step 13: checkpoint_before {r['checkpoint_before']}, want {from_ck}")
            rp = run(["replay", "--checkpoint", r["checkpoint_before"] or from_ck, "--spike-report", rep_path,
                      "--train-data", data])
            if json.loads(rp.stdout.splitlines()[-1])["checkpoint"]["step"] != 10:
                failures.append(f"replay from the reported checkpoint: {rp.stdout[-300:]}")
        later = os.path.join(cont, "spikes", "step-0000016.json")
        if os.path.exists(later):
            r = json.load(open(later))["run"]
            want = (os.path.join(cont, "checkpoints", "step-00000015"), from_ck)
            if (r["checkpoint_before"], r["checkpoint_earlier"]) != want:
                failures.append(f"step 16: {r['checkpoint_before']}, {r['checkpoint_earlier']}; want {want}")

        # rollback: two steps back from the spike at 13 is the resumed-from state of step 10.
        rb = os.path.join(tmp, "rb")
        r = run(common + ["--resume", from_ck, "--inject-lr-spike", "12:100", "--on-spike", "rollback", "--rollback-steps", "2",
                          "--max-rollbacks", "1", "--out", rb, "--log", rb + ".jsonl"], check=False)
        if r.returncode != 0:
            failures.append(f"rollback run: exit {r.returncode}: {r.stderr.strip().splitlines()[-1][:300]}")
        events = [json.loads(x) for x in open(rb + ".jsonl")]
        rolled = [e for e in events if e.get("event") == "rollback"]
        if not rolled or rolled[0].get("to") != 10 or rolled[0].get("source") != from_ck:
            failures.append(f"rollback: {rolled[:1]} (skips: {[e for e in events if e.get('event') == 'skip'][:1]})")

    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("PASSED: a run resumed into a new --out returns to and replays from the checkpoint it came from")


if __name__ == "__main__":
    main()
