"""`sixnd report` of runs whose directories share a name (the same seed of two variants of an
ablation: runs/<variant>/seed-N): each run keeps a name of its own in the table and the plots'
legends (its path as given), and each row shows its own run's numbers. A log whose step records
hold no memory (a field its checks take as optional) is reported, its memory plot saying so."""
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
        runs = {}
        for variant, lr in (("base", "3e-3"), ("lr=1e-2", "1e-2")):
            d = os.path.join(tmp, "runs", variant, "seed-1337")
            flags = tiny_text.train_flags(p, steps=2)
            flags[flags.index("--lr") + 1] = lr
            tiny_text.sixnd("train", *flags, "--out", d, "--log", os.path.join(d, "run.jsonl"))
            steps = [json.loads(x) for x in open(os.path.join(d, "run.jsonl")) if '"type":"step"' in x]
            runs[d] = f"{steps[-1]['loss']:.4f}"
        out = os.path.join(tmp, "report")
        tiny_text.sixnd("report", *runs, "--out", out)
        names = [s["name"] for s in json.load(open(os.path.join(out, "report_input.json")))["sources"]]
        print(f"names of two runs in directories seed-1337: {names}")
        if names != list(runs):
            failures.append(f"the runs are named {names}, expected their paths {list(runs)}")
        md = open(os.path.join(out, "report.md")).read()
        for d, loss in runs.items():
            row = [r for r in md.splitlines() if r.startswith("| " + d + " |")]
            if len(row) != 1 or row[0].split(" | ")[2] != loss:
                failures.append(f"report.md: expected one row for {d} with train loss {loss}: {row}")
        no_memory = os.path.join(tmp, "no_memory.jsonl")
        with open(no_memory, "w") as f:
            for line in open(os.path.join(next(iter(runs)), "run.jsonl")):
                r = json.loads(line)
                r.pop("memory", None)
                f.write(json.dumps(r) + "\n")
        r = tiny_text.sixnd("report", no_memory, "--out", os.path.join(tmp, "report_no_memory"), check=False)
        if r.returncode != 0 or not os.path.exists(os.path.join(tmp, "report_no_memory", "memory.png")):
            failures.append(f"a log without memory records: exit {r.returncode}, {r.stderr.strip()[-300:]}")
    return sixnd_files.report(failures, "sixnd report: runs whose directories share a name, a log without memory")


if __name__ == "__main__":
    sys.exit(main())
