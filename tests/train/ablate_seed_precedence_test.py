"""`sixnd ablate --seed S --config FILE` where FILE sets another seed: as for `sixnd train`, the
command line wins over the file, so the first seed is S. (The file's seed had been read after
--seed was taken off the command line, and won: the runs trained from the file's seed.)"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
import tiny_text  # noqa: E402


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        p = tiny_text.make(tmp)
        config = os.path.join(tmp, "base.toml")
        open(config, "w").write("seed = 7\n")
        out = os.path.join(tmp, "abl")
        flags = tiny_text.train_flags(p, steps=1)
        flags = flags[:flags.index("--val-data")] + flags[flags.index("--val-data") + 2:]
        flags = flags[:flags.index("--eval-every")] + flags[flags.index("--eval-every") + 4:]
        r = tiny_text.sixnd("ablate", "--out", out, "--seed", "5", "--config", config, "--vary", "lr=1e-3,2e-3",
                            "--seeds", "1", *flags, check=False)
        if r.returncode != 0:
            failures.append(f"ablate: exit {r.returncode}, {r.stderr.strip()[-400:]}")
        else:
            seeds = sorted(os.listdir(os.path.join(out, "runs", "base")))
            plan = json.load(open(os.path.join(out, "ablation.json")))
            print(f"base runs: {seeds}; ablation.json base_seed {plan['base_seed']}")
            if seeds != ["seed-5"] or plan["base_seed"] != 5:
                failures.append(f"--seed 5 on the command line lost to the config file's seed = 7: runs {seeds}, "
                                f"base_seed {plan['base_seed']}")
            header = json.loads(open(os.path.join(out, "runs", "base", seeds[0], "run.jsonl")).readline())
            if header["config"]["seed"] != int(seeds[0][len("seed-"):]):
                failures.append(f"the run in {seeds[0]} trained with seed {header['config']['seed']}")
    return sixnd_files.report(failures, "sixnd ablate: --seed on the command line wins over the base config's seed")


if __name__ == "__main__":
    sys.exit(main())
