"""`sixnd report`'s plots of a run that skipped steps (--on-spike skip, or non-finite steps). A
skipped step writes no step record, only its events, so they are drawn from the events: the
gradient-norm plot marks every spike and skip at the tokens the run had reached (a skipped
step's batch is consumed too) and the gradient norm the event logged, or at the plot's top edge
where that norm was not finite; an evaluation due at a skipped step is on the validation
curves."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "scripts"))
import report_plots  # noqa: E402
import sixnd_files  # noqa: E402
import tiny_text  # noqa: E402


def drawn_markers(source):
    """{marker: [(x, y, on the top edge)]} of the gradient-norm plot of one run (its source in
    sixnd report's input)."""
    figs = []
    report_plots.save = lambda fig, out, name, title: figs.append(fig)
    report_plots.plot_grad_norm([report_plots.Series("run", [(source["path"], source["branch"])])], None, ["blue"])
    ax = figs[0].axes[0]
    got = {}
    for line in ax.lines:
        if line.get_marker() in ("x", "v", "^"):
            edge = line.get_transform() is ax.get_xaxis_transform()
            got.setdefault(line.get_marker(), []).append((line.get_xdata()[0], line.get_ydata()[0], edge))
    return got


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        p = tiny_text.make(tmp)
        run = os.path.join(tmp, "run")
        log = os.path.join(run, "run.jsonl")
        # The learning rate x1000 at step 7 makes steps 8-12 spike; each is skipped, and the fifth
        # in a row stops the run (--max-bad-steps 5), which exits non-zero.
        # Evaluations at steps 4 and 8, the second due at a skipped step.
        flags = tiny_text.train_flags(p, steps=12)
        flags[flags.index("--eval-every") + 1] = "4"
        r = tiny_text.sixnd("train", *flags, "--out", run, "--log", log, "--spike-window", "4", "--on-spike", "skip",
                            "--inject-lr-spike", "7:1000:2", check=False)
        recs = [json.loads(x) for x in open(log)]
        logged = {x["step"]: x["tokens"] for x in recs if x["type"] == "step"}
        batch_tokens = recs[0]["batch_tokens"]
        want = {}
        for e in recs:
            if e["type"] == "event" and e["event"] in ("spike", "skip"):
                tokens = logged[max(logged)] + (e["step"] - max(logged)) * batch_tokens
                want.setdefault({"spike": "x", "skip": "v"}[e["event"]], []).append((tokens, e["grad_norm"], False))
        print(f"train exited {r.returncode}; step records for steps {sorted(logged)}; events: "
              f"{ {k: len(v) for k, v in want.items()} } (x spike, v skip)")
        if len(want.get("v", [])) < 2 or any(e["step"] in logged for e in recs if e.get("event") == "skip"):
            failures.append(f"expected several skipped steps without step records: {want}")
        source = tiny_text.report_source(run, os.path.join(tmp, "report"))
        got = drawn_markers(source)
        print(f"markers drawn: { {k: len(v) for k, v in got.items()} }")
        if got != want:
            failures.append(f"the gradient-norm plot marks {got}, expected {want}")
        series = report_plots.Series("run", [(source["path"], source["branch"])])
        for key in ("val_loss", "val_bpb"):
            evals = [(logged[max(logged)] + (e["step"] - max(logged)) * batch_tokens, e[key]) for e in recs
                     if e.get("event") == "eval" and e["step"] not in logged]
            xs, mean, _, _ = series.curve(key)
            print(f"{key} curve: {list(zip(xs, mean))}; evaluations at skipped steps: {evals}")
            if not evals or any(p not in zip(xs, mean) for p in evals):
                failures.append(f"the {key} curve {list(zip(xs, mean))} misses the evaluations at skipped steps {evals}")

        # A skip for a non-finite gradient logs a null norm: its marker goes at the top edge.
        nan_log = os.path.join(tmp, "nan.jsonl")
        with open(nan_log, "w") as f:
            f.write("".join(json.dumps(x) + "\n" for x in recs if x["type"] != "event" or x["event"] not in ("spike", "skip")))
            f.write(json.dumps({"type": "event", "event": "skip", "step": max(logged) + 1, "loss": None, "grad_norm": None,
                                "reason": "non_finite"}) + "\n")
        got = drawn_markers(tiny_text.report_source(nan_log, os.path.join(tmp, "nan_report")))
        want = {"v": [(logged[max(logged)] + batch_tokens, 0.97, True)]}
        print(f"a non-finite skip's marker: {got}")
        if got != want:
            failures.append(f"a skip with a null gradient norm is marked {got}, expected {want}")
    return sixnd_files.report(failures, "sixnd report plots skipped steps and their evaluations")


if __name__ == "__main__":
    sys.exit(main())
