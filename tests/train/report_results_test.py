"""`sixnd report` of an ablation whose results.json lacks what the table is drawn from (a metric
an older sixnd did not write, a variant without runs): one error line naming results.json and
what is missing, no --out left behind — not the drawing script's traceback and "failed with
status 1". A table whose runs logged no memory (no "peak" among peak_memory's categories) is
drawn, its peak memory shown as "-"."""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import bad_input  # noqa: E402
import tiny_text  # noqa: E402


def edited(src, dst, edit):
    """A copy of the ablation directory src at dst, its results.json changed by edit()."""
    def setup():
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(src, dst)
        path = os.path.join(dst, "results.json")
        r = json.load(open(path))
        edit(r)
        json.dump(r, open(path, "w"))
    return setup


def main():
    with tempfile.TemporaryDirectory() as tmp:
        p = tiny_text.make(tmp)
        abl = os.path.join(tmp, "abl")
        tiny_text.sixnd("ablate", "--out", abl, "--vary", "lr=3e-3,6e-3", "--seeds", "1",
                        *tiny_text.train_flags(p, steps=2))
        older, no_runs, no_memory = (os.path.join(tmp, n) for n in ("older", "no_runs", "no_memory"))
        out = os.path.join(tmp, "report")

        def drop_hfu(r):
            del r["variants"][1]["metrics"]["hfu"]

        def drop_runs(r):
            r["variants"][1]["runs"] = []

        def drop_memory(r):
            for v in r["variants"]:
                v["metrics"]["peak_memory"] = {}

        def memory_dash():
            lines = open(os.path.join(out, "report.md")).read().splitlines()
            head = [x for x in lines if x.startswith("| variant / run |")][0].split(" | ")
            cells = [x for x in lines if x.startswith("| base |")][0].split(" | ")
            peak = cells[head.index("peak MiB")]
            return None if peak == "-" else f"base row's peak MiB: {peak}"

        cases = [bad_input.Case("metric_missing", ["report", older, "--out", out],
                                [os.path.join(older, "results.json"), "lr=6e-3", "hfu"], unchanged=[out],
                                setup=edited(abl, older, drop_hfu), env=tiny_text.ENV, timeout=120),
                 bad_input.Case("variant_without_runs", ["report", no_runs, "--out", out],
                                [os.path.join(no_runs, "results.json"), "without a name or runs"], unchanged=[out],
                                setup=edited(abl, no_runs, drop_runs), env=tiny_text.ENV, timeout=120),
                 bad_input.Case("no_memory_categories", ["report", no_memory, "--out", out], [], exit_code=0,
                                setup=edited(abl, no_memory, drop_memory), check=memory_dash, env=tiny_text.ENV,
                                timeout=120)]
        return bad_input.run_cases(cases, "sixnd report of an ablation's results.json without what it draws")


if __name__ == "__main__":
    sys.exit(main())
