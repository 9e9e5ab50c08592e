"""`sixnd report`'s plots draw the branch a run ended on, as its table does: a run resumed from an
older checkpoint with fewer steps leaves the longer branch's steps in its log, and neither the
loss, learning-rate nor validation curves may show them (the table's final losses are the new
branch's, so a plot running past them would contradict it). Also a rollback: the steps it undid
and every event they logged (evaluations, skips, spikes, samples, checkpoints) are not drawn, the
spike that caused it still is, and the table counts that spike alone. The plots count lines as
sixnd does, so a '\r' inside a record (JSON whitespace) moves nothing."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "scripts"))
import report_plots  # noqa: E402
import sixnd_files  # noqa: E402
import tiny_text  # noqa: E402


def records(path):
    return [json.loads(x) for x in open(path)]


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        p = tiny_text.make(tmp)
        run = os.path.join(tmp, "run")
        log = os.path.join(run, "run.jsonl")
        flags = tiny_text.train_flags(p, steps=8) + ["--out", run, "--log", log, "--checkpoint-every", "4", "--keep-last", "0"]
        tiny_text.sixnd("train", *flags)
        flags[flags.index("--steps") + 1] = "6"
        tiny_text.sixnd("train", *flags, "--resume", os.path.join(run, "checkpoints", "step-00000004"))
        recs = records(log)
        second = [i for i, r in enumerate(recs) if r["type"] == "header"][1]
        ended_on = {r["step"]: r for r in recs[:second] if r["type"] == "step" and r["step"] <= 4}
        ended_on.update({r["step"]: r for r in recs[second:] if r["type"] == "step"})
        left = [r["step"] for r in recs[:second] if r["type"] == "step" and r["step"] > 6]
        print(f"log: steps 1-8, then a resume from step 4 to step 6 (steps {left} left behind)")

        source = tiny_text.report_source(run, os.path.join(tmp, "report"))
        s = report_plots.Series("run", [(source["path"], source["branch"])])
        for key, x in (("loss", "tokens"), ("lr", "step"), ("val_loss", "tokens")):
            xs, mean, _, _ = s.curve(key, x)
            want = [(r[x], r[key]) for _, r in sorted(ended_on.items()) if isinstance(r.get(key), float)]
            print(f"{key} curve: {len(xs)} points, last {xs[-1]} -> {mean[-1]}")
            if list(zip(xs, mean)) != want:
                failures.append(f"the {key} curve is {list(zip(xs, mean))}, expected the branch the run ended on: {want}")
        table_val = source["metrics"]["val_loss"]
        if s.curve("val_loss")[1][-1] != table_val:
            failures.append(f"the validation curve ends at {s.curve('val_loss')[1][-1]}, the table at {table_val}")

        # A "\r" is whitespace inside a JSON record (an editor's, or another program's writer):
        # the lines the plots read are the table's still.
        cr = os.path.join(tmp, "cr.jsonl")
        with open(log, newline="") as f, open(cr, "w", newline="") as g:
            g.write(f.read().replace('{"', '{\r"'))
        cr_source = tiny_text.report_source(cr, os.path.join(tmp, "cr_report"))
        cr_header, cr_steps, cr_events = report_plots.read_log(cr_source["path"], cr_source["branch"])
        header, steps_read, events_read = report_plots.read_log(source["path"], source["branch"])
        if (cr_header, cr_steps, cr_events) != (header, steps_read, events_read):
            failures.append(f"with a '\\r' in each record the plots read steps {sorted(cr_steps)}, events "
                            f"{[e['event'] for e in cr_events]}, header {bool(cr_header)}: not the same log's "
                            f"{sorted(steps_read)}, {[e['event'] for e in events_read]}")

        rolled = os.path.join(tmp, "rolled.jsonl")
        steps = {r["step"]: r for r in recs[:second] if r["type"] == "step"}
        with open(rolled, "w") as f:
            # Steps 4 and 5 undone: step 4's checkpoint and sample, step 5 skipped as a spike
            # and evaluated. None of it may be drawn (a skip marker where the run kept no step).
            lines = [recs[0]] + [steps[k] for k in range(1, 5)]
            lines += [{"type": "event", "event": "checkpoint", "step": 4, "dir": "ck/step-00000004"},
                      {"type": "event", "event": "sample", "step": 4, "ids": [1], "text": "a"},
                      {"type": "event", "event": "spike", "step": 5, "loss": 9.0, "action": "skip"},
                      {"type": "event", "event": "skip", "step": 5, "loss": 9.0, "grad_norm": 2.0, "reason": "spike",
                       "consecutive": 1},
                      {"type": "event", "event": "eval", "step": 5, "val_loss": 9.0, "batches": 1},
                      {"type": "event", "event": "spike", "step": 6, "loss": 9.0, "action": "rollback"},
                      {"type": "event", "event": "rollback", "step": 6, "from": 6, "to": 3, "batches_skipped": 0,
                       "tokens_skipped": 0, "source": "memory", "rollbacks": 1}]
            lines += [steps[4]]
            f.write("".join(json.dumps(r) + "\n" for r in lines))
        source = tiny_text.report_source(rolled, os.path.join(tmp, "rolled_report"))
        _, got, events = report_plots.read_log(source["path"], source["branch"])
        val = report_plots.Series("rolled", [(source["path"], source["branch"])]).curve("val_loss", "step")[0]
        if 5 in val:
            failures.append(f"the validation curve {val} shows the evaluation at step 5 that the rollback undid")
        print(f"rolled back from 6 to 3, then step 4 again: steps {sorted(got)}, events {[e['event'] for e in events]}")
        if sorted(got) != [1, 2, 3, 4]:
            failures.append(f"after a rollback to step 3 and step 4 again, the steps read are {sorted(got)}")
        if [(e["event"], e["step"]) for e in events] != [("spike", 6), ("rollback", 6)]:
            failures.append(f"the events drawn are not the rollback and its spike alone: {events}")
        if source["metrics"]["spikes"] != 1:
            failures.append(f"the table counts {source['metrics']['spikes']} spikes, not the rollback's one")
        if source["steps"] != 4:
            failures.append(f"the report says the run reached step {source['steps']}, not step 4")
    return sixnd_files.report(failures, "sixnd report plots the branch the run ended on")


if __name__ == "__main__":
    sys.exit(main())
