"""`sixnd ablate`: 2 values x 2 seeds on a tiny model, killed in the middle of its third run and
started again: the finished runs are not redone (their logs untouched), the interrupted one
resumes from its checkpoint, and results.json / results.csv equal the numbers recomputed here
from the run logs — means and sample stds, differences, and Welch's p-value computed with
math only (the Student-t density integrated by Simpson's rule) to 1e-6. Speed-only knobs
(recompute, attention; zero with each run under mpirun -np 2) are reported loss-equal. Two
tokenizers with their shards, varied as config files, compare by bits per byte. Bad flags end
with one error line; a bad knob or value is refused before any run, with no --out left behind,
and a directory that is not an ablation is never written into. A run that fails midway leaves
an ablation the same command resumes once the cause is gone. A variant that diverges (stops at
--max-bad-steps) is a result, not a failure: counted, with no final losses and no comparison."""
import csv
import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import bad_input  # noqa: E402
import sixnd_files  # noqa: E402
import tiny_text  # noqa: E402


def run_metrics(path):
    """The metrics of train/run_metrics.h, written again from its comment."""
    steps, spikes, opened, warmups = {}, set(), False, set()
    first_of_process = False

    def drop_from(first, with_spikes):
        for s in [s for s in steps if s >= first]:
            del steps[s]
        if with_spikes:
            spikes.difference_update([s for s in spikes if s >= first])

    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if opened and r.get("type") != "header" and "step" in r:
            opened = False
            drop_from(r["step"], True)
        if r.get("type") == "header":
            opened = first_of_process = True
        elif r.get("type") == "step":
            steps[r["step"]] = r
            # Each process's first step is its warm-up, a resumed one's too.
            if first_of_process:
                warmups.add(id(r))
            first_of_process = False
        elif r.get("type") == "event" and r.get("event") == "spike":
            spikes.add(r["step"])
        elif r.get("type") == "event" and r.get("event") == "rollback":
            drop_from(r["to"] + 1, False)
    order = sorted(steps)
    recs = [steps[s] for s in order]
    timed = [r for r in recs if id(r) not in warmups] or recs
    mem = {}
    for r in recs:
        for k, v in r.get("memory", {}).items():
            if k != "total" and isinstance(v, (int, float)):
                mem[k] = max(mem.get(k, 0.0), v)
    vals = [r for r in recs if "val_loss" in r]
    bpbs = [r for r in recs if "val_bpb" in r]
    return {"final_train_loss": recs[-1]["loss"], "val_loss": vals[-1]["val_loss"] if vals else None,
            "val_bpb": bpbs[-1]["val_bpb"] if bpbs else None,
            "tokens_per_s": sum(r["tokens_per_s"] for r in timed) / len(timed),
            "mfu": sum(r["mfu"] for r in timed) / len(timed), "hfu": sum(r["hfu"] for r in timed) / len(timed),
            "peak_memory": mem, "comm_bytes": float(sum(r["comm_bytes"] for r in recs)), "spikes": len(spikes),
            "wall_clock_s": sum(r["step_ms"] for r in recs) / 1e3}


def mean(x):
    return sum(x) / len(x)


def std(x):
    m = mean(x)
    return math.sqrt(sum((v - m) ** 2 for v in x) / (len(x) - 1)) if len(x) > 1 else None


def welch_p(a, b):
    va, vb = std(a) ** 2 / len(a), std(b) ** 2 / len(b)
    t = (mean(a) - mean(b)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    n, h = 200000, abs(t) / 200000
    f = [c * (1 + (i * h) ** 2 / df) ** (-(df + 1) / 2) for i in range(n + 1)]
    integral = (f[0] + f[-1] + 4 * sum(f[1:-1:2]) + 2 * sum(f[2:-1:2])) * h / 3
    return 1 - 2 * integral


def close(a, b, tol=1e-9):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= tol * max(1.0, abs(b))


def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest(), os.stat(path).st_mtime_ns


def check_table(out, variants, seeds, failures):
    res = json.load(open(os.path.join(out, "results.json")))
    rows = {r["variant"]: r for r in csv.DictReader(open(os.path.join(out, "results.csv")))}
    per_variant = {}
    for v in res["variants"]:
        if v["name"] not in variants:
            failures.append(f"unexpected variant {v['name']}")
            continue
        runs = [run_metrics(os.path.join(out, "runs", variants[v["name"]], f"seed-{s}", "run.jsonl")) for s in seeds]
        per_variant[v["name"]] = runs
        for key in ("final_train_loss", "val_loss", "val_bpb", "tokens_per_s", "mfu", "hfu", "comm_bytes", "spikes",
                    "wall_clock_s"):
            xs = [r[key] for r in runs]
            st = v["metrics"][key]
            if not close(st["mean"], mean(xs)) or not close(st["std"], std(xs)):
                failures.append(f"{v['name']} {key}: table {st}, logs mean {mean(xs)} std {std(xs)}")
            if not close(float(rows[v["name"]][key + "_mean"]), mean(xs), 1e-8):
                failures.append(f"{v['name']} {key}: csv {rows[v['name']][key + '_mean']}, logs {mean(xs)}")
        for cat in runs[0]["peak_memory"]:
            xs = [r["peak_memory"][cat] for r in runs]
            if not close(v["metrics"]["peak_memory"][cat]["mean"], mean(xs)):
                failures.append(f"{v['name']} peak_memory.{cat}: {v['metrics']['peak_memory'][cat]}, logs {mean(xs)}")
    base_val = [r["val_loss"] for r in per_variant["base"]]
    for v in res["variants"][1:]:
        val = [r["val_loss"] for r in per_variant[v["name"]]]
        if not close(v["val_loss_diff"], mean(val) - mean(base_val)):
            failures.append(f"{v['name']} val_loss_diff {v['val_loss_diff']}, logs {mean(val) - mean(base_val)}")
        if len(seeds) > 1 and std(val) + std(base_val) > 0:
            p = welch_p(val, base_val)
            print(f"{v['name']}: val loss {mean(val):.5f} vs base {mean(base_val):.5f}, p = {v['p_value']:.8f} "
                  f"(recomputed {p:.8f})")
            if abs(v["p_value"] - p) > 1e-6:
                failures.append(f"{v['name']} p_value {v['p_value']}, recomputed {p}")
    return res


def resume_after_failure(tmp, p, failures):
    """A run that fails for a cause --check cannot see (its validation shard is missing) stops
    the ablation with the run's log named; once the cause is gone the same command skips the
    finished base and runs the rest."""
    out = os.path.join(tmp, "later")
    missing = os.path.join(tmp, "later_val.bin")
    flags = tiny_text.train_flags(p, steps=2)
    flags = flags[:flags.index("--val-data")] + flags[flags.index("--val-data") + 2:]
    cmd = ["ablate", "--out", out, "--vary", f"val-data={p['val']},{missing}", "--seeds", "1", *flags]
    r = tiny_text.sixnd(*cmd, check=False)
    errors = [x for x in r.stderr.splitlines() if "error" in x]
    if r.returncode != 1 or len(errors) != 1 or "train.log" not in errors[0] or "same command resumes" not in errors[0]:
        failures.append(f"a failing later run: exit {r.returncode}, stderr {r.stderr.strip()[-400:]}")
    shutil.copy(p["val"], missing)
    r = tiny_text.sixnd(*cmd, check=False)
    if r.returncode != 0:
        failures.append(f"rerun after the failed run's cause was fixed: {r.stderr.strip()[-400:]}")
        return
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    print(f"after a failed run, the same command: ran {summary['ran']}, skipped {summary['skipped']}")
    if (summary["ran"], summary["skipped"]) != (1, 1):
        failures.append(f"rerun after a failed run ran {summary['ran']} and skipped {summary['skipped']}, expected 1 and 1")


def diverged_variant(tmp, p, failures):
    """A learning rate of 1e30 makes every step after the first non-finite: both seeds stop at
    --max-bad-steps, the ablation finishes, and the table counts them as diverged with no final
    losses, no difference and no p-value; the same command then has nothing left to run."""
    out = os.path.join(tmp, "diverging")
    cmd = ["ablate", "--out", out, "--vary", "lr=3e-3,1e30", "--seeds", "2", "--max-bad-steps", "2",
           *tiny_text.train_flags(p, steps=8)]
    r = tiny_text.sixnd(*cmd, check=False)
    if r.returncode != 0:
        failures.append(f"an ablation with a diverging variant failed: {r.stderr.strip()[-400:]}")
        return
    if r.stderr.count("diverged (stopped at --max-bad-steps") != 2:
        failures.append(f"expected a warning for each diverged run: {r.stderr.strip()[-600:]}")
    res = json.load(open(os.path.join(out, "results.json")))
    base, high = res["variants"]
    got = (base["diverged"], high["diverged"], [x["diverged"] for x in high["runs"]],
           high["metrics"]["val_loss"]["n"], high["val_loss_diff"], high["p_value"], base["metrics"]["val_loss"]["n"])
    print(f"diverging variant: diverged {base['diverged']} / {high['diverged']}, its val_loss n "
          f"{high['metrics']['val_loss']['n']}, diff {high['val_loss_diff']}, p {high['p_value']}")
    if got != (0, 2, [True, True], 0, None, None, 2):
        failures.append(f"diverged variant in results.json: {got}")
    rows = {r["variant"]: r for r in csv.DictReader(open(os.path.join(out, "results.csv")))}
    if (rows["base"]["diverged"], rows["lr=1e30"]["diverged"], rows["lr=1e30"]["val_loss_mean"]) != ("0", "2", ""):
        failures.append(f"diverged variant in results.csv: {rows['lr=1e30']}")
    report = os.path.join(tmp, "diverging_report")
    r = tiny_text.sixnd("report", out, "--out", report, check=False)
    if r.returncode != 0 or "| 2 (2 diverged) |" not in open(os.path.join(report, "report.md")).read():
        failures.append(f"report of the diverging ablation does not count its diverged seeds: {r.stderr.strip()[-300:]}")
    r = tiny_text.sixnd(*cmd, check=False)
    summary = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {}
    if (summary.get("ran"), summary.get("skipped")) != (0, 4):
        failures.append(f"rerun of a finished ablation with diverged runs: exit {r.returncode}, {summary}")


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        p = tiny_text.make(tmp)
        out = os.path.join(tmp, "abl")
        cmd = [tiny_text.SIXND, "ablate", "--out", out, "--vary", "lr=2e-3,6e-3", "--seeds", "2",
               *tiny_text.train_flags(p, steps=300), "--checkpoint-every", "10", "--keep-last", "2"]
        third = os.path.join(out, "runs", "lr=6e-3", "seed-1337")
        # Kill the runner once the third run has a checkpoint and has not finished.
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tiny_text.ENV,
                                start_new_session=True)
        t0, killed = time.time(), False
        while proc.poll() is None and time.time() - t0 < 600:
            ck = os.path.join(third, "checkpoints")
            if os.path.isdir(ck) and any(os.path.exists(os.path.join(ck, d, "DONE")) for d in os.listdir(ck)) \
                    and not os.path.exists(os.path.join(third, "DONE")):
                os.kill(proc.pid, signal.SIGKILL)
                killed = True
                break
            time.sleep(0.01)
        proc.wait()
        time.sleep(0.5)  # the run itself ends on its parent-death signal
        if not killed:
            return sixnd_files.report([f"the ablation ended (exit {proc.returncode}) before it could be killed in its "
                                       f"third run: {proc.stderr.read().decode()[-500:]}"], "sixnd ablate")
        finished = {d: digest(os.path.join(out, "runs", "base", d, "run.jsonl")) for d in ("seed-1337", "seed-1338")}
        print(f"killed after {time.time() - t0:.1f} s, in the third run")
        r = subprocess.run(cmd, capture_output=True, text=True, env=tiny_text.ENV)
        if r.returncode != 0:
            return sixnd_files.report([f"second invocation failed: {r.stderr[-800:]}"], "sixnd ablate")
        summary = json.loads(r.stdout.strip().splitlines()[-1])
        print(r.stderr.strip())
        if (summary["ran"], summary["skipped"]) != (2, 2):
            failures.append(f"second invocation ran {summary['ran']} and skipped {summary['skipped']}, expected 2 and 2")
        if r.stderr.count("finished earlier, skipped") != 2 or "resuming from step" not in r.stderr:
            failures.append("second invocation: expected two skipped runs and one resumed")
        for d, before in finished.items():
            if digest(os.path.join(out, "runs", "base", d, "run.jsonl")) != before:
                failures.append(f"finished run base/{d} was written again")
        headers = [json.loads(x) for x in open(os.path.join(third, "run.jsonl")) if '"header"' in x]
        if len(headers) != 2 or not headers[1]["resumed_from"]:
            failures.append(f"the interrupted run's log has {len(headers)} headers; expected a resumed second one")
        check_table(out, {"base": "base", "lr=6e-3": "lr=6e-3"}, [1337, 1338], failures)

        # Speed-only knobs: the same losses as the base.
        out2 = os.path.join(tmp, "speed")
        # Its base flags partly from a --config file, the first seed too; the file's value of a
        # varied knob is overruled by the knob's first value, with a warning naming its line.
        config = os.path.join(tmp, "base.toml")
        open(config, "w").write("eval-batches = 2\nweight-decay = 0.05\nseed = 7\nattention = naive\n")
        flags = tiny_text.train_flags(p, steps=6)
        flags = flags[:flags.index("--eval-batches")] + flags[flags.index("--eval-batches") + 2:]
        r = tiny_text.sixnd("ablate", "--out", out2, "--vary", "recompute=none,full", "--vary",
                            "attention=flash,naive", "--seeds", "1", "--config", config, *flags)
        res = check_table(out2, {"base": "base", "recompute=full": "recompute=full",
                                 "attention=naive": "attention=naive"}, [7], failures)
        base = res["base_config"]
        if (base["eval_batches"], base["seed"]) != (2, 7) or abs(base["weight_decay"] - 0.05) > 1e-6:
            failures.append(f"--config was not the base configuration: {base}")
        if base["attention"] != "flash" or config + ":4: attention = naive is overruled by --vary attention" not in r.stderr:
            failures.append(f"the base config's attention = naive: base ran {base['attention']}, warning "
                            f"{[x for x in r.stderr.splitlines() if 'overruled' in x]}")
        for v in res["variants"][1:]:
            print(f"{v['name']}: loss_equal {v.get('loss_equal')} (largest relative difference "
                  f"{v.get('loss_max_rel_diff')})")
            if v.get("loss_equal") is not True:
                failures.append(f"{v['name']} is not reported loss-equal: {v.get('loss_max_rel_diff')}")
        # Each run under mpirun: ZeRO stages give the same losses and send bytes.
        if shutil.which("mpirun"):
            out3 = os.path.join(tmp, "zero")
            tiny_text.sixnd("ablate", "--out", out3, "--vary", "zero=0,1", "--seeds", "1", "--np", "2", "--mpirun",
                            "mpirun --allow-run-as-root --oversubscribe", *tiny_text.train_flags(p, steps=4))
            res = check_table(out3, {"base": "base", "zero=1": "zero=1"}, [1337], failures)
            z = res["variants"][1]
            world = [json.loads(x)["world_size"] for x in open(os.path.join(out3, "runs", "zero=1", "seed-1337",
                                                                             "run.jsonl")) if '"header"' in x]
            print(f"zero=1 under mpirun -np 2: loss_equal {z.get('loss_equal')}, bytes sent "
                  f"{z['metrics']['comm_bytes']['mean']:.0f}, world size {world}")
            if z.get("loss_equal") is not True or not z["metrics"]["comm_bytes"]["mean"] > 0 or world != [2]:
                failures.append(f"zero=1 under mpirun: {z.get('loss_equal')}, {z['metrics']['comm_bytes']}, {world}")
        else:
            print("mpirun not found: the --np part is not run")
        # Two tokenizers (with their shards) compared by bits per byte: knobs that change together
        # vary as config files.
        q = tiny_text.make(tmp, vocab=290, prefix="b_")
        configs = []
        for name, d in (("tok_a.toml", p), ("tok_b.toml", q)):
            configs.append(os.path.join(tmp, name))
            open(configs[-1], "w").write(f'tokenizer = "{d["tokenizer"]}"\ntrain-data = "{d["train"]}"\n'
                                         f'val-data = "{d["val"]}"\n')
        flags = tiny_text.train_flags(p, steps=4)
        for f in ("--tokenizer", "--train-data", "--val-data"):
            flags = flags[:flags.index(f)] + flags[flags.index(f) + 2:]
        out4 = os.path.join(tmp, "tokenizers")
        tiny_text.sixnd("ablate", "--out", out4, "--vary", "config=" + ",".join(configs), "--seeds", "1", *flags)
        res = check_table(out4, {"base": "base", "config=" + configs[1]: "config=" + configs[1].replace("/", "_")},
                          [1337], failures)
        used = res["variants"][1]["runs"][0]
        hdr = [json.loads(x) for x in open(os.path.join(out4, used["log"])) if '"header"' in x][0]
        bpb = [v["metrics"]["val_bpb"]["mean"] for v in res["variants"]]
        print(f"tokenizers by config file: val bits per byte {bpb}")
        if hdr["config"]["tokenizer"] != q["tokenizer"] or None in bpb:
            failures.append(f"--vary config: the variant trained with {hdr['config']['tokenizer']}, bpb {bpb}")
        if "loss_equal" in json.load(open(os.path.join(out, "results.json")))["variants"][1]:
            failures.append("lr is not a speed-only knob, yet has loss_equal")

        flags = tiny_text.train_flags(p, steps=2)
        bad_config = os.path.join(tmp, "bad.toml")
        # A config file that sets nothing the flags below give.
        plain = os.path.join(tmp, "plain.toml")
        open(plain, "w").write("weight-decay = 0.05\n")
        not_ablation = os.path.join(tmp, "a_run")
        long_seq = list(flags)
        long_seq[long_seq.index("--seq-len") + 1] = "4096"
        cases = [bad_input.Case("vary_without_values", ["ablate", "--out", os.path.join(tmp, "b1"), "--vary", "lr",
                                                        *flags], ["--vary", "KNOB=V1,V2"]),
                 bad_input.Case("one_value", ["ablate", "--out", os.path.join(tmp, "b2"), "--vary", "lr=1e-3", *flags],
                                ["--vary", "two values"]),
                 bad_input.Case("log_flag", ["ablate", "--out", os.path.join(tmp, "b3"), "--vary", "lr=1e-3,2e-3",
                                             *flags, "--log", "x.jsonl"], ["--log", "set by sixnd ablate"]),
                 bad_input.Case("other_plan", ["ablate", "--out", out2, "--vary", "recompute=none,selective",
                                               "--seeds", "1", "--seed", "7", "--config", config, *flags],
                                ["another ablation"],
                                unchanged=[out2]),
                 bad_input.Case("negative_seed", ["ablate", "--out", os.path.join(tmp, "b7"), "--vary", "lr=1e-3,2e-3",
                                                  "--seed", "-1", *flags], ["--seed", "got '-1'"],
                                unchanged=[os.path.join(tmp, "b7")]),
                 bad_input.Case("seeds_past_2^64", ["ablate", "--out", os.path.join(tmp, "b8"), "--vary",
                                                    "lr=1e-3,2e-3", "--seeds", "3", "--seed", str(2**64 - 2), *flags],
                                ["--seed", str(2**64 - 2) + " + 2", "2^64-1"], unchanged=[os.path.join(tmp, "b8")]),
                 bad_input.Case("bad_knob", ["ablate", "--out", os.path.join(tmp, "b4"), "--vary", "no-such=1,2", *flags],
                                ["--vary no-such", "not a sixnd train flag"], unchanged=[os.path.join(tmp, "b4")]),
                 # Every run's flags are checked before the first starts: the base runs are not
                 # trained, and no --out is left to block the corrected command.
                 bad_input.Case("bad_value", ["ablate", "--out", os.path.join(tmp, "b5"), "--vary", "lr=1e-3,-1",
                                              "--seeds", "1", *flags],
                                ["run lr=-1, seed 1337", "--lr", "finite number > 0", "got -1"],
                                unchanged=[os.path.join(tmp, "b5")], timeout=30),
                 bad_input.Case("seq_len_over_context", ["ablate", "--out", os.path.join(tmp, "b9"), "--vary",
                                                         "recompute=none,full", "--seeds", "1", *long_seq],
                                ["run base, seed 1337", "--seq-len", "exceeds the model's max_seq_len"],
                                unchanged=[os.path.join(tmp, "b9")], timeout=30),
                 bad_input.Case("bad_value_in_config", ["ablate", "--out", os.path.join(tmp, "b6"), "--vary",
                                                        "config=" + plain + "," + bad_config, "--seeds", "1", *flags],
                                ["run config=" + bad_config, "--grad-clip", "got -1"],
                                unchanged=[os.path.join(tmp, "b6")], timeout=30),
                 bad_input.Case("not_an_ablation", ["ablate", "--out", not_ablation, "--vary", "lr=1e-3,2e-3", "--seeds",
                                                    "1", *flags],
                                [not_ablation, "not an ablation"], unchanged=[not_ablation])]
        # A launcher that refuses as Open MPI does (a block between rules of dashes): the error
        # quotes the block's first paragraph, not the closing rule.
        refusing = os.path.join(tmp, "refusing_mpirun")
        with open(refusing, "w") as f:
            f.write("#!/bin/sh\nrule=------------------------------------------\necho $rule\n"
                    "echo 'launcher has detected an attempt'\necho '  to run as root.'\necho\n"
                    "echo 'Running as root is discouraged.'\necho $rule\nexit 1\n")
        os.chmod(refusing, 0o755)
        cases.append(bad_input.Case("launcher_refuses", ["ablate", "--out", os.path.join(tmp, "b10"), "--vary",
                                                         "lr=1e-3,2e-3", "--seeds", "1", "--np", "2", "--mpirun", refusing,
                                                         *flags],
                                    ["run base, seed 1337: launcher has detected an attempt to run as root."],
                                    unchanged=[os.path.join(tmp, "b10")], timeout=30))
        # An ablation directory another ablate is writing (this process holds its lock).
        in_use = os.path.join(tmp, "in_use")
        held = bad_input.hold_dir_lock(in_use)  # noqa: F841 (held while the cases run)
        cases.append(bad_input.Case("in_use", ["ablate", "--out", in_use, "--vary", "lr=1e-3,2e-3", "--seeds", "1",
                                               *flags],
                                    ["--out", in_use, "in use by another sixnd ablate", "4242"], unchanged=[in_use],
                                    timeout=30))
        # Flags that would be ignored or misread are refused before anything runs.
        for name, extra, words in (("mpirun_without_np", ["--mpirun", "mpirun --oversubscribe"], ["--mpirun", "without --np"]),
                                   ("np_zero", ["--np", "0"], ["--np", "at least 1", "got 0"]),
                                   ("loss_tol_nan", ["--loss-tol", "nan"], ["--loss-tol", ">= 0"]),
                                   ("config_empty", ["--config", ""], ["--config", "is empty"])):
            cases.append(bad_input.Case(name, ["ablate", "--out", os.path.join(tmp, name), "--vary", "recompute=none,full",
                                               "--seeds", "1", *extra, *flags], words,
                                        unchanged=[os.path.join(tmp, name)], timeout=30))
        # What ablate sets for each run, or takes from the base config, cannot hide in a config
        # file: named by its line before anything is written.
        owning_config, seeded_variant, lr_variant = (os.path.join(tmp, n) for n in ("owning.toml", "seeded.toml", "lr.toml"))
        open(owning_config, "w").write("weight-decay = 0.05\nout = elsewhere\n")
        open(seeded_variant, "w").write("# a variant\nseed = 3\n")
        open(lr_variant, "w").write("lr = 1e-2\n")
        for name, extra, words in (("config_sets_out", ["--vary", "lr=1e-3,2e-3", "--config", owning_config],
                                    [owning_config + ":2", "out is set by sixnd ablate"]),
                                   ("varied_config_sets_seed", ["--vary", "config=" + plain + "," + seeded_variant],
                                    [seeded_variant + ":2", "seed", "same seeds"]),
                                   ("varied_config_loses_to_base_flag", ["--vary", "config=" + plain + "," + lr_variant],
                                    [lr_variant + ":1", "--lr", "this variant's value would be lost"])):
            cases.append(bad_input.Case(name, ["ablate", "--out", os.path.join(tmp, name), "--seeds", "1", *extra, *flags],
                                        words, unchanged=[os.path.join(tmp, name)], timeout=30))
        # An empty --out would put the runs in the directory ablate was started from.
        cases.append(bad_input.Case("out_empty", ["ablate", "--out", "", "--vary", "lr=1e-3,2e-3", "--seeds", "1", *flags],
                                    ["--out", "is empty"], timeout=30))
        open(bad_config, "w").write("grad-clip = -1\n")
        os.makedirs(os.path.join(not_ablation, "checkpoints", "step-0000002"))
        open(os.path.join(not_ablation, "run.jsonl"), "w").write("{}\n")
        if bad_input.run_cases(cases, "sixnd ablate bad input") != 0:
            failures.append("bad input cases failed")
        r = tiny_text.sixnd("ablate", "--out", os.path.join(tmp, "b5"), "--vary", "lr=1e-3,2e-3", "--seeds", "1", *flags,
                            check=False)
        if r.returncode != 0:
            failures.append(f"the corrected ablation after a refused value failed: {r.stderr.strip()[-400:]}")
        resume_after_failure(tmp, p, failures)
        diverged_variant(tmp, p, failures)
    return sixnd_files.report(failures, "sixnd ablate: resume, skip, table from the logs, p-values, loss_equal")


if __name__ == "__main__":
    sys.exit(main())
