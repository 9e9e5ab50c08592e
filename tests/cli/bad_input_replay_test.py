"""`sixnd replay` refuses what it cannot replay with one error line naming the file or flag and
the fault, and exit status 1: a missing or malformed report, a report without batch rows, rows
beyond their shard or in shards that are nowhere, checkpoints that are missing, not before the
spike, or of another model, or of another run, dtype or seed than the report records, or
whose losses are not finite, no earlier checkpoint to compare with, bad or empty flag values,
--train-data holding fewer rows than the baseline draws (it would repeat them).
A report's shard rewritten since the run holds other rows than the spike's: refused, unless
--train-data holds the run's shard of that name, which the rows are then read from."""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
import tiny_text  # noqa: E402
from bad_input import Case, run_cases  # noqa: E402

T = 16


def train(paths, out, steps, every, max_seq_len=32, extra=()):
    flags = tiny_text.train_flags(paths, steps=steps, batch=2, seq_len=min(T, max_seq_len))
    flags[flags.index("--max-seq-len") + 1] = str(max_seq_len)
    tiny_text.sixnd("train", *flags, "--checkpoint-every", str(every), "--out", out, *extra)
    return os.path.join(out, "checkpoints")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        paths = tiny_text.make(tmp)
        ck = train(paths, os.path.join(tmp, "run"), 4, 2)
        other = train(paths, os.path.join(tmp, "other"), 2, 2, max_seq_len=8)
        one = train(paths, os.path.join(tmp, "one"), 2, 2)
        # An LR x1e14 at step 3 leaves finite weights whose losses are not: steps 4 on are skipped.
        blown = train(paths, os.path.join(tmp, "blown"), 4, 2, extra=("--inject-lr-spike", "3:1e14", "--max-bad-steps", "5"))
        step2, step4 = os.path.join(ck, "step-00000002"), os.path.join(ck, "step-00000004")
        ntok = (os.path.getsize(paths["train"]) - 1024) // 2

        def report(name, step=5, rows=None, seq_len=T, earlier=step2, text=None, run=None):
            path = os.path.join(tmp, name)
            if text is not None:
                open(path, "w").write(text)
                return path
            rows = [{"shard": paths["train"], "offset": 100}, {"shard": paths["train"], "offset": 400}] if rows is None else rows
            json.dump({"step": step, "run": {"checkpoint_earlier": earlier, "seq_len": seq_len, **(run or {})},
                       "trigger": {"loss_mean": 5.0}, "batch": {"seq_len": seq_len, "rows": rows}}, open(path, "w"))
            return path

        good = report("good.json")
        base = ["replay", "--checkpoint", step4, "--spike-report", good, "--train-data", paths["train"], "--device", "cpu"]

        def args(**change):
            a = list(base)
            for flag, value in change.items():
                flag = "--" + flag.replace("_", "-")
                if flag in a:
                    a[a.index(flag) + 1] = value
                else:
                    a += [flag, value]
            return a

        missing = os.path.join(tmp, "nope.json")
        not_json = report("bad.json", text="{\"step\": 5, ")
        no_rows = report("norows.json", rows=[])
        beyond = report("beyond.json", rows=[{"shard": paths["train"], "offset": ntok - T}])
        # Offsets past 2^63 and near 2^64 are offsets (read as "no offset", and end + seq_len wrapped).
        far = [report(f"far{i}.json", rows=[{"shard": paths["train"], "offset": o}]) for i, o in enumerate((2**63, 2**64 - 3))]
        nowhere = report("nowhere.json", rows=[{"shard": os.path.join(tmp, "gone", "shard_007.bin"), "offset": 0}])
        early_spike = report("early.json", step=3)
        long_rows = report("long.json", seq_len=40)
        no_earlier = report("noearlier.json", earlier=None)
        late_earlier = report("late_earlier.json", earlier=step4)
        pruned = os.path.join(ck, "step-00000001")  # never written, as if --keep-last had pruned it
        pruned_earlier = report("pruned_earlier.json", earlier=pruned)
        wide = os.path.join(tmp, "wide.bin")
        sixnd_files.write_shard(wide, [5] * 50 + [400] + [5] * 50)
        # 15 rows of T + 1 tokens: the baseline's 8 batches of the report's 2 rows draw 16.
        few = os.path.join(tmp, "few.bin")
        sixnd_files.write_shard(few, [5] * (15 * (T + 1) + T))
        out_of_vocab = report("vocab.json", rows=[{"shard": wide, "offset": 40}])
        # What the report records of its run: a checkpoint of another run, dtype or seed is refused.
        of_run = report("of_run.json", run={"checkpoint_before": step4, "dtype": "fp32", "seed": 1337})
        bf16_run = report("bf16_run.json", run={"dtype": "bf16"})
        seed_run = report("seed_run.json", run={"seed": 99})
        # A report names its run's id (no checkpoint it names needs to be there still).
        run_id = json.load(open(os.path.join(step4, "meta.json")))["run_id"]
        id_run = report("id_run.json", run={"run_id": run_id})
        # ... and within one run a resume may change the seed (--allow-resume-changes).
        id_reseeded = report("id_reseeded.json", run={"run_id": run_id, "seed": 99})
        cases = [
            Case("checkpoint of another run than the report's", args(checkpoint=os.path.join(one, "step-00000002"),
                                                                     spike_report=of_run),
                 ["--checkpoint", os.path.join(one, "step-00000002"), "cannot be from the run of", of_run, "run id"]),
            Case("checkpoint of another dtype than the report's run", args(spike_report=bf16_run),
                 ["--checkpoint", "fp32 weights", "bf16"]),
            Case("checkpoint of another seed than the report's run", args(spike_report=seed_run),
                 ["--checkpoint", "--seed 1337", "99"]),
            Case("good report naming its run", args(spike_report=of_run), [], exit_code=0),
            Case("checkpoint of another run than the report's run id", args(checkpoint=os.path.join(one, "step-00000002"),
                                                                            spike_report=id_run),
                 ["--checkpoint", "cannot be from the run of", id_run, "the report's run is " + run_id]),
            Case("good report naming its run id", args(spike_report=id_run), [], exit_code=0),
            Case("report of the checkpoint's run, reseeded on a resume", args(spike_report=id_reseeded), [], exit_code=0),
            Case("checkpoint whose losses are not finite",
                 args(checkpoint=os.path.join(blown, "step-00000004"), earlier_checkpoint=os.path.join(blown, "step-00000002"),
                      spike_report=report("blown.json", earlier=None)),
                 [os.path.join(blown, "step-00000004"), "spike row 0", "not finite"]),
            Case("report missing", args(spike_report=missing), [missing]),
            Case("report not JSON", args(spike_report=not_json), [not_json, "not a JSON spike report"]),
            Case("report without batch rows", args(spike_report=no_rows), [no_rows, "no batch rows"]),
            Case("row beyond its shard", args(spike_report=beyond), [beyond, "batch row 0", "beyond", paths["train"]]),
            *[Case(f"row at offset {o}", args(spike_report=f), [f, "batch row 0", f"{T + 1} tokens from offset {o} lie beyond",
                                                                paths["train"]])
              for f, o in zip(far, (2**63, 2**64 - 3))],
            Case("row token outside the vocabulary", args(spike_report=out_of_vocab), [wide, "token 400 at position 50",
                                                                                         "vocabulary of 320"]),
            Case("shard not found", args(spike_report=nowhere), [nowhere, "shard_007.bin", "not found"]),
            Case("checkpoint missing", args(checkpoint=os.path.join(ck, "step-00000009")), ["step-00000009"]),
            Case("checkpoint not before the spike", args(spike_report=early_spike), ["--checkpoint", "not before the spike"]),
            Case("earlier checkpoint not earlier", args(earlier_checkpoint=step4), ["--earlier-checkpoint", "not before"]),
            # Without the flag the report's field is what named it, and the error says so.
            Case("report's earlier checkpoint not earlier", args(checkpoint=step2, spike_report=late_earlier),
                 [late_earlier + ": run.checkpoint_earlier", "not before", "give --earlier-checkpoint"]),
            Case("report's earlier checkpoint gone", args(spike_report=pruned_earlier),
                 [pruned_earlier + ": run.checkpoint_earlier", pruned, "give --earlier-checkpoint"]),
            Case("--seed -1", args(seed="-1"), ["--seed", "0 to 18446744073709551615", "'-1'"]),
            Case("--seed past 2^64", args(seed="18446744073709551616"), ["--seed", "above 18446744073709551615"]),
            Case("earlier checkpoint of another model", args(earlier_checkpoint=os.path.join(other, "step-00000002")),
                 ["another model", "step-00000002"]),
            Case("checkpoint of another model shape", args(checkpoint=os.path.join(other, "step-00000002"),
                                                           earlier_checkpoint=step2, spike_report=no_earlier),
                 ["context of 8 tokens", "seq_len of 16"]),
            Case("rows longer than the model's context", args(spike_report=long_rows), ["context of 32", "seq_len of 40"]),
            Case("no earlier checkpoint", args(checkpoint=os.path.join(one, "step-00000002"), spike_report=no_earlier),
                 ["--earlier-checkpoint", "no complete checkpoint"]),
            Case("train data matches nothing", args(train_data=os.path.join(tmp, "none_*.bin")), ["none_*.bin"]),
            Case("--other-batches 1", args(other_batches="1"), ["--other-batches", "must be in [2,", "got 1"]),
            Case("--other-batches too many", args(other_batches="100001"), ["--other-batches", "got 100001"]),
            Case("--other-batches not a number", args(other_batches="many"), ["--other-batches"]),
            Case("--device bad", args(device="tpu"), ["tpu"]),
            Case("train data with fewer rows than the baseline draws", args(train_data=few),
                 [few, "15 rows of 17 tokens", "fewer than the 16", "--other-batches"]),
            Case("train data with as many rows as the baseline draws", args(train_data=few, other_batches="7"), [],
                 exit_code=0),
            # A script's unset variable: an empty path names no file, and an empty
            # --earlier-checkpoint read as the flag left out would replay another checkpoint.
            Case("--checkpoint empty", args(checkpoint=""), ["--checkpoint", "is empty"]),
            Case("--spike-report empty", args(spike_report=""), ["--spike-report", "is empty"]),
            Case("--train-data empty", args(train_data=""), ["--train-data", "is empty"]),
            Case("--earlier-checkpoint empty", args(earlier_checkpoint=""), ["--earlier-checkpoint", "is empty"]),
            Case("earlier checkpoint of another run", args(earlier_checkpoint=os.path.join(one, "step-00000002")),
                 [os.path.join(one, "step-00000002"), "another run", "same run"]),
            Case("good report runs", args(), [], exit_code=0),
        ]

        # A run on its own copy of the shard, whose report names that copy; the copy is then
        # rewritten in place (another data set under the same relative path looks the same).
        moved = os.path.join(tmp, "moved")
        os.makedirs(moved)
        shutil.copy(paths["train"], os.path.join(moved, "train.bin"))
        mv_ck = train(dict(paths, train=os.path.join(moved, "train.bin")), os.path.join(tmp, "onmoved"), 4, 2)
        # (The report sits beside the copy: a shard of that name beside it would be read instead.)
        mv_report = report(os.path.join("moved", "report.json"), rows=[{"shard": os.path.join(moved, "train.bin"), "offset": 100}],
                           earlier=os.path.join(mv_ck, "step-00000002"))
        mv_args = ["replay", "--checkpoint", os.path.join(mv_ck, "step-00000004"), "--spike-report", mv_report, "--device", "cpu"]
        before = json.loads(tiny_text.sixnd(*mv_args, "--train-data", paths["train"]).stdout.splitlines()[-1])
        tokens = open(os.path.join(moved, "train.bin"), "rb").read()
        rewritten = tokens[:1024 + 200] + bytes(len(tokens) - 1024 - 400) + tokens[-200:]
        open(os.path.join(moved, "train.bin"), "wb").write(rewritten)
        cases.append(Case("spike rows' shard rewritten since the run", mv_args + ["--train-data", os.path.join(moved, "train.bin")],
                          [mv_report, "batch row 0", "not the one the run trained on", "content hash"]))

        def read_from_run_data():
            r = tiny_text.sixnd(*mv_args, "--train-data", paths["train"], check=False)
            if r.returncode != 0:
                return f"exit {r.returncode}: {r.stderr[-300:]}"
            rows, want = json.loads(r.stdout.splitlines()[-1])["checkpoint"]["row_losses"], before["checkpoint"]["row_losses"]
            return None if rows == want else f"row losses {rows}, before the rewrite {want}"
        cases.append(Case("spike rows' shard rewritten, the run's in --train-data", ["--version"], [], exit_code=0,
                          check=read_from_run_data))

        # Baseline batches from data the run did not train on: said, and the replay still runs.
        val_as_train = args(train_data=paths["val"])

        def other_data_said():
            r = tiny_text.sixnd(*val_as_train, check=False)
            said = "not the data the run trained on" in r.stderr and paths["val"] in r.stderr
            return None if r.returncode == 0 and said else f"exit {r.returncode}, no warning: {r.stderr[-300:]}"
        cases.append(Case("train data other than the run's", ["--version"], [], exit_code=0, check=other_data_said))
        return run_cases(cases, "sixnd replay bad input")


if __name__ == "__main__":
    sys.exit(main())
