"""`sixnd replay` end to end on a tiny model trained here with checkpoints: a spike report whose
batch rows point at a shard region filled with uniform random tokens gets the verdict "data"
(its rows are high from the checkpoint before the spike and from an earlier one); a report
whose rows are ordinary text gets "not_reproducible". The last line is the JSON verdict, the
table comes before it, and the same seed draws the same baseline. A report naming its junk shard
and checkpoints relative to where the run was started replays from another directory, also where
that relative path names a file there that is not a shard."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402
import tiny_text  # noqa: E402

T, B, STEPS, EVERY = 32, 4, 150, 50


def shard_tokens(path):
    return np.fromfile(path, dtype=np.uint16, offset=1024)


def setup(tmp):
    """A trained run with checkpoints at steps 50, 100, 150 and a data folder holding the
    training shard and a copy of it with a stretch of junk; returns (run dir, data dir, the
    junk rows' offsets, the run's recent loss mean)."""
    paths = tiny_text.make(tmp)
    data = os.path.join(tmp, "data")
    os.makedirs(data)
    shutil.copy(paths["train"], os.path.join(data, "train.bin"))
    tokens = shard_tokens(paths["train"]).astype(np.int64)
    rows = [20_000 + i * (T + 1) for i in range(B)]
    junk = tokens.copy()
    junk[rows[0]:rows[-1] + T + 1] = np.random.default_rng(7).integers(0, tiny_text.VOCAB, rows[-1] + T + 1 - rows[0])
    sixnd_files.write_shard(os.path.join(data, "spiky.bin"), junk)
    run, log = os.path.join(tmp, "run"), os.path.join(tmp, "run.jsonl")
    tiny_text.sixnd("train", *tiny_text.train_flags(paths, steps=STEPS, batch=B, seq_len=T), "--checkpoint-every",
                    str(EVERY), "--out", run, "--log", log)
    losses = [r["loss"] for r in map(json.loads, open(log)) if r.get("type") == "step"]
    return run, data, rows, float(np.mean(losses[-20:]))


def report(tmp, name, run, shard, rows, recent, earlier=True):
    """A spike report at step STEPS + 1 whose batch is `rows` of `shard`, as the trainer writes
    it (only the fields the replay reads matter; the rest are there as they would be)."""
    ck = os.path.join(run, "checkpoints")
    r = {"step": STEPS + 1, "action": "warn",
         "run": {"out": run, "train_data": shard, "seq_len": T, "batch": B, "world": 1, "accum": 1,
                 "checkpoint_before": os.path.join(ck, f"step-{STEPS:08d}"),
                 "checkpoint_earlier": os.path.join(ck, f"step-{EVERY:08d}") if earlier else None},
         "trigger": {"fired_on": ["loss"], "loss_mean": recent},
         "batch": {"seq_len": T, "rows": [{"rank": 0, "micro": 0, "row": i, "shard": shard, "offset": o}
                                          for i, o in enumerate(rows)], "recent_loss_mean": recent}}
    path = os.path.join(tmp, name)
    json.dump(r, open(path, "w"))
    return path


def replay(run, rep, data, *extra):
    r = tiny_text.sixnd("replay", "--checkpoint", os.path.join(run, "checkpoints", f"step-{STEPS:08d}"), "--spike-report",
                        rep, "--train-data", data, "--device", "cpu", *extra)
    lines = r.stdout.strip().splitlines()
    print("\n".join(lines[:-1]))
    return json.loads(lines[-1]), r.stdout


def check_rows_across_shard_ends(tmp, run, data, text_rows, v, recent, failures):
    """The loader reads a row that runs past its shard's end on into the next shard of the
    data, and the report names only where it starts. The same training tokens cut into two
    shards just inside the second row: that row, reported as starting in the first shard, has
    the loss it had in the whole shard, also when --train-data is a copy of the shards (the
    report's still there); a row running past the end of a shard that is not in --train-data is
    one error naming it."""
    tokens = shard_tokens(os.path.join(data, "train.bin")).astype(np.int64)
    cut = text_rows[1] + 5
    split = os.path.join(tmp, "split")
    os.makedirs(split)
    sixnd_files.write_shard(os.path.join(split, "a.bin"), tokens[:cut])
    sixnd_files.write_shard(os.path.join(split, "b.bin"), tokens[cut:])
    rows = [o if o < cut else o - cut for o in text_rows]
    rep = report(tmp, "split.json", run, os.path.join(split, "a.bin"), rows, recent)
    r = json.load(open(rep))
    for row, o in zip(r["batch"]["rows"], text_rows):
        row["shard"] = os.path.join(split, "a.bin" if o < cut else "b.bin")
    json.dump(r, open(rep, "w"))
    got, _ = replay(run, rep, os.path.join(split, "*.bin"), "--other-batches", "6", "--seed", "5")
    if got["checkpoint"]["row_losses"] != v["checkpoint"]["row_losses"]:
        failures.append(f"rows across a shard end: losses {got['checkpoint']['row_losses']}, "
                        f"in the whole shard {v['checkpoint']['row_losses']}")
    # A copy of the data as --train-data, the report's shards still where it names them: the
    # copy's shards are those (a row goes on into the copy's next shard; it was refused as
    # running past a shard outside --train-data, and the baseline could draw the spike rows).
    shutil.copytree(split, split + "-copy")
    copied, _ = replay(run, rep, os.path.join(split + "-copy", "*.bin"), "--other-batches", "6", "--seed", "5")
    if copied != got:
        failures.append(f"the report's rows with a copy of the data as --train-data: {copied}, "
                        f"from the data itself {got}")
    r = tiny_text.sixnd("replay", "--checkpoint", os.path.join(run, "checkpoints", f"step-{STEPS:08d}"), "--spike-report",
                        rep, "--train-data", os.path.join(split, "b.bin"), "--device", "cpu", check=False)
    said = [line for line in r.stderr.splitlines() if "error" in line]
    if r.returncode == 0 or len(said) != 1 or "a.bin" not in said[0] or "not one of them" not in said[0]:
        failures.append(f"a row past the end of a shard outside --train-data: exit {r.returncode}: {r.stderr.strip()}")


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        run, data, rows, recent = setup(tmp)
        glob = os.path.join(data, "*.bin")
        print(f"trained {STEPS} steps; recent loss {recent:.4f}")

        junk = report(tmp, "junk.json", run, os.path.join(data, "spiky.bin"), rows, recent)
        v, out = replay(run, junk, glob)
        print(json.dumps(v))
        if v["verdict"] != "data":
            failures.append(f"junk rows: verdict {v['verdict']}, expected data")
        if v["checkpoint"]["step"] != STEPS or v["earlier"]["step"] != EVERY or v["rows"] != B:
            failures.append(f"junk rows: replayed steps {v['checkpoint']['step']}/{v['earlier']['step']}, {v['rows']} rows")
        if len(v["checkpoint"]["row_losses"]) != B or abs(np.mean(v["checkpoint"]["row_losses"]) - v["checkpoint"]["spike_loss"]) > 1e-9:
            failures.append(f"the spike loss is not the mean of its rows' losses: {v['checkpoint']}")
        if "verdict: data" not in out or "earlier checkpoint" not in out:
            failures.append("the table lacks the verdict line or the earlier checkpoint's row")
        # Without the report's checkpoint_earlier the oldest checkpoint of the run is used: the same one.
        v2, _ = replay(run, report(tmp, "junk2.json", run, os.path.join(data, "spiky.bin"), rows, recent, earlier=False), glob)
        if v2["earlier"]["step"] != EVERY or v2 != v:
            failures.append(f"the default earlier checkpoint gave {v2['earlier']['step']}, or other numbers: {v2}")

        # The trainer writes a junk batch's shard beside its report, and names it and the
        # checkpoints relative to where the run was started: replayed from elsewhere they are
        # found beside the report and beside --checkpoint.
        spikes = os.path.join(run, "spikes")
        os.makedirs(spikes)
        shutil.copy(os.path.join(data, "spiky.bin"), os.path.join(spikes, f"step-{STEPS + 1:07d}-junk.bin"))
        moved = report(tmp, "moved.json", run, f"run/spikes/step-{STEPS + 1:07d}-junk.bin", rows, recent)
        r = json.load(open(moved))
        r["run"]["checkpoint_earlier"] = f"run/checkpoints/step-{EVERY:08d}"
        json.dump(r, open(os.path.join(spikes, f"step-{STEPS + 1:07d}.json"), "w"))
        # There, the report's relative path names a file that is not a shard (another tool's
        # data): it was the replay's error; the shard beside the report is the one.
        decoy = os.path.join(data, "run", "spikes")
        os.makedirs(decoy)
        open(os.path.join(decoy, f"step-{STEPS + 1:07d}-junk.bin"), "wb").write(b"raw uint16 tokens, no header")
        elsewhere = subprocess.run([tiny_text.SIXND, "replay", "--checkpoint", os.path.join(run, "checkpoints", f"step-{STEPS:08d}"),
                                    "--spike-report", os.path.join(spikes, f"step-{STEPS + 1:07d}.json"), "--train-data", glob,
                                    "--device", "cpu"], capture_output=True, text=True, env=tiny_text.ENV, cwd=data)
        if elsewhere.returncode != 0:
            failures.append(f"a report's relative paths, replayed from another directory: {elsewhere.stderr.strip()[-400:]}")
        else:
            w = json.loads(elsewhere.stdout.strip().splitlines()[-1])
            if w["verdict"] != "data" or w["earlier"]["step"] != EVERY:
                failures.append(f"a report's relative paths, replayed from another directory: {w}")

        text_rows = [3_000 + i * 997 for i in range(B)]
        text = report(tmp, "text.json", run, os.path.join(data, "train.bin"), text_rows, recent)
        v, _ = replay(run, text, glob, "--other-batches", "6", "--seed", "5")
        print(json.dumps(v))
        check_rows_across_shard_ends(tmp, run, data, text_rows, v, recent, failures)
        if v["verdict"] != "not_reproducible":
            failures.append(f"text rows: verdict {v['verdict']}, expected not_reproducible")
        if v["other_batches"] != 6 or v["seed"] != 5:
            failures.append(f"text rows: --other-batches/--seed not used: {v}")
        again, _ = replay(run, text, glob, "--other-batches", "6", "--seed", "5")
        other, _ = replay(run, text, glob, "--other-batches", "6", "--seed", "6")
        if again != v:
            failures.append("the same seed drew another baseline")
        if other["checkpoint"]["others_mean"] == v["checkpoint"]["others_mean"]:
            failures.append("another seed drew the same baseline")
    return sixnd_files.report(failures, "sixnd replay: junk rows -> data, text rows -> not_reproducible")


if __name__ == "__main__":
    sys.exit(main())
