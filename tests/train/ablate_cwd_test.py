"""`sixnd ablate` rerun from another working directory: relative paths in its flags would resolve
there to other files, and the remaining runs would train on them and be tabled beside the
finished ones. The rerun is refused, naming the directory the ablation started in, and nothing
runs; the same command from that directory resumes it, every run on the same data."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
import tiny_text  # noqa: E402


def ablate(cmd, cwd):
    return subprocess.run([tiny_text.SIXND, *cmd], cwd=cwd, capture_output=True, text=True, env=tiny_text.ENV,
                          stdin=subprocess.DEVNULL, timeout=300)


def train_shard(log):
    return json.loads(open(log).readline())["data"]["shards"][0]["path"]


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
        os.makedirs(a)
        os.makedirs(b)
        tiny_text.make(a)
        # b: another training shard under the same name, and the variant's validation shard.
        sixnd_files.write_repeating_shard(os.path.join(b, "train.bin"))
        for name in ("tok.bin", "val.bin"):
            shutil.copy(os.path.join(a, name), os.path.join(b, name))
        shutil.copy(os.path.join(a, "val.bin"), os.path.join(b, "val2.bin"))
        flags = tiny_text.train_flags({"train": "train.bin", "val": "val.bin", "tokenizer": "tok.bin"}, steps=2)
        flags = flags[:flags.index("--val-data")] + flags[flags.index("--val-data") + 2:]
        out = os.path.join(tmp, "abl")
        cmd = ["ablate", "--out", out, "--vary", "val-data=val.bin,val2.bin", "--seeds", "1", *flags]
        variant = os.path.join(out, "runs", "val-data=val2.bin", "seed-1337")
        r = ablate(cmd, a)  # the base runs, the variant fails: val2.bin is not in a
        if r.returncode != 1 or not os.path.exists(os.path.join(out, "runs", "base", "seed-1337", "DONE")):
            failures.append(f"first attempt in a: exit {r.returncode}, {r.stderr.strip()[-300:]}")
        r = ablate(cmd, b)
        errors = [x for x in r.stderr.splitlines() if "error" in x]
        print(f"rerun from another directory: exit {r.returncode}: {errors}")
        if r.returncode != 1 or len(errors) != 1 or "was started in" not in errors[0] or a not in errors[0] \
                or out not in errors[0]:
            failures.append(f"rerun from another directory: exit {r.returncode}, stderr {r.stderr.strip()[-400:]}")
        if os.path.exists(os.path.join(variant, "run.jsonl")):
            shard = train_shard(os.path.join(variant, "run.jsonl"))
            failures.append(f"the rerun from another directory trained on its files: {shard}")
        shutil.copy(os.path.join(a, "val.bin"), os.path.join(a, "val2.bin"))
        r = ablate(cmd, a)
        if r.returncode != 0:
            failures.append(f"rerun in a: exit {r.returncode}, {r.stderr.strip()[-400:]}")
        else:
            shards = {train_shard(os.path.join(out, "runs", v, "seed-1337", "run.jsonl"))
                      for v in ("base", "val-data=val2.bin")}
            if shards != {os.path.join(a, "train.bin")}:
                failures.append(f"the runs trained on {shards}, expected a's train.bin alone")
    return sixnd_files.report(failures, "sixnd ablate rerun from another working directory")


if __name__ == "__main__":
    sys.exit(main())
