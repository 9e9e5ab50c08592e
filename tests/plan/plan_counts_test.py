"""`sixnd plan`'s human table prints counts with every digit: the steps a run takes (what a user
passes to `train --steps`), the tokens per step (`--total-batch-tokens`), the ranks and the
micro-batches a pipeline stage holds. %g's four or six digits showed 152,587.89 steps as
1.526e+05, 65,536 tokens per step as 6.554e+04 and 1,234,567 ranks as 1.23457e+06."""
import os
import subprocess
import sys

SIXND = os.environ["SIXND_BIN"]


def table(*args):
    r = subprocess.run([SIXND, "plan"] + list(args), capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"plan {args}: {r.stderr}")
    return {line.split()[0]: line.split()[1] for line in r.stdout.splitlines() if line.startswith("  ")}


def main():
    faults = []

    def want(what, got, text):
        print(f"{'ok  ' if got == text else 'FAIL'} {what}: {got}" + ("" if got == text else f", expected {text}"))
        if got != text:
            faults.append(what)

    # 1e10 tokens in steps of 8 x 1024 x 8 = 65,536: 152,587.890625 steps.
    t = table("--model", "gpt2-124m", "--batch", "8", "--seq-len", "1024", "--tokens", "1e10", "--ranks", "8")
    want("steps", t["steps"], "152587.89")
    want("tokens per step", t["tokens_per_step"], "65536")
    t = table("--model", "d6", "--batch", "4", "--seq-len", "256", "--tokens", "1024000")
    want("a whole number of steps", t["steps"], "1000")
    want("ranks", table("--params", "1e9", "--ranks", "1234567")["ranks"], "1234567")
    t = table("--model", "d6", "--batch", "1", "--seq-len", "64", "--tokens", "1e9", "--pipeline-stages", "2",
              "--micro-batches", "1234567", "--pipeline-schedule", "gpipe")
    want("micro-batches in flight", t["stage0_in_flight"], "1234567")
    print("FAILED" if faults else "PASSED", "sixnd plan: counts with every digit")
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
