"""`sixnd eval` with a flag given an empty value (a script's unset variable) is refused in one
line naming the flag, as train and replay refuse one: `--checkpoint ""` was read as no
checkpoint and scored a random model with exit 0, and `--tokenizer ""` / `--per-item ""` as
the flag left out."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
from bad_input import Case, run_cases  # noqa: E402


def main():
    d = tempfile.mkdtemp(prefix="sixnd_eval_empty_")
    try:
        shard = os.path.join(d, "val.bin")
        sixnd_files.write_shard(shard, [(i * 7919) % 320 for i in range(200)])
        model = ["--init", "random", "--model", "tiny", "--vocab-size", "320", "--device", "cpu", "--dtype", "fp32"]
        ev = ["eval", "--data", shard, "--batch", "2", "--seq-len", "8"]
        cases = [
            Case("--checkpoint ''", ev + ["--checkpoint", ""], ["--checkpoint", "empty"]),
            Case("--tokenizer ''", ev + model + ["--tokenizer", ""], ["--tokenizer", "empty"]),
            Case("--per-item ''", ev + model + ["--per-item", ""], ["--per-item", "empty"]),
            Case("--data ''", ["eval"] + model + ["--data", ""], ["--data", "empty"]),
        ]
        return run_cases(cases, "sixnd eval empty flag values")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
