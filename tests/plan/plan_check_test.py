"""`sixnd plan --check` against real runs on the CPU: on the demo model (d6, one run at odd widths)
and on GPT-2 124M (a few steps) the planner predicts the ledger's model-state bytes exactly (every
category; and the packed weight copies where bf16 runs in FP32 arithmetic),
activations, workspace and the peak within 2%, and the FLOPs per step exactly; a plan made
without the log totals the same peak. The same d6 run, with --profile, shows a profile with
large matmuls at tens of FLOP per byte and layernorm, GELU and AdamW at a few, each op bound on
the side of the ridge its intensity is on; and every run ends with the bill (a log event and a
summary line).

Nothing here compares a time with a time: on a shared machine another process can stretch any
step or op several times over, and performance is measured by the benchmarks. The timings are
held to what load cannot change: the log's MFU is its FLOPs over its step time and peak, the
step_time_s row (the time each step's MFU implies for the FLOPs, the median) equals its median
step, also over an even number of steps (the median of two), the profile's rows
are non-negative and add up to its step (the untimed rest a row of its own) and HFU / MFU is
the recomputed FLOPs' ratio."""
import json
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, OMP_NUM_THREADS="2", ASAN_OPTIONS="detect_leaks=0")
PEAK_TOL = 0.02
# Arithmetic on the same numbers: only rounding may differ.
SAME = 1e-9


def train(tmp, name, extra):
    out, log = os.path.join(tmp, name), os.path.join(tmp, name + ".jsonl")
    cmd = [SIXND, "train", "--init", "random", "--train-data", os.path.join(tmp, "train.bin"), "--device", "cpu",
           "--out", out, "--log", log, "--keep-last", "1"] + extra
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=1200)
    if r.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{r.stderr[-2000:]}")
    return out, log, r.stderr


def check(log):
    r = subprocess.run([SIXND, "plan", "--check", log, "--json"], capture_output=True, text=True, env=ENV, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"plan --check {log}: {r.stderr}")
    return {row["quantity"]: row for row in json.loads(r.stdout)["rows"]}


def judge(name, rows, failures):
    for q, row in rows.items():
        print(f"{name}: {q:28s} predicted {row['predicted']:.6g} measured {row['measured']:.6g} ratio {row['ratio']}")
    for q in ("memory.params", "memory.grads", "memory.master", "memory.adam_m", "memory.adam_v", "memory.model_states",
              "flops_per_step"):
        if rows[q]["predicted"] != rows[q]["measured"] and abs(rows[q]["ratio"] - 1) > 1e-12:
            failures.append(f"{name}: {q} predicted {rows[q]['predicted']} != measured {rows[q]['measured']}")
    # Where bf16 runs in FP32 arithmetic (no BF16 dot products) the packed weight panels are
    # predicted to the byte, padding included.
    if "memory.weight_copies" in rows and rows["memory.weight_copies"]["predicted"] != rows["memory.weight_copies"]["measured"]:
        failures.append(f"{name}: weight copies predicted {rows['memory.weight_copies']['predicted']} "
                        f"!= measured {rows['memory.weight_copies']['measured']}")
    for q in ("memory.activations", "memory.workspace", "memory.peak"):
        if abs(rows[q]["ratio"] - 1) > PEAK_TOL:
            failures.append(f"{name}: {q} ratio {rows[q]['ratio']} outside 1 +- {PEAK_TOL}")


def close(a, b, rel=SAME):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def check_times(name, log, rows, failures):
    """The log's times against its own FLOPs and peak, and the step_time_s row against the log."""
    recs = [json.loads(x) for x in open(log)]
    header = next(x for x in recs if x.get("type") == "header")
    peak, world = header["peak_flops"], header["world_size"]
    steps = [x for x in recs if x.get("type") == "step"]
    for s in steps:
        if not (s["step_ms"] > 0 and close(s["mfu"] * s["step_ms"] / 1e3 * world * peak, s["flops"])):
            failures.append(f"{name}: step {s['step']}: MFU {s['mfu']} is not FLOPs {s['flops']} / "
                            f"({s['step_ms']} ms x {world} x peak {peak})")
    later = steps[1:] if len(steps) > 1 else steps  # the first step allocates
    row = rows["step_time_s"]
    want = float(np.median([rows["flops_per_step"]["predicted"] / (world * peak * s["mfu"]) for s in later]))
    if not close(row["predicted"], want):
        failures.append(f"{name}: step_time_s predicted {row['predicted']}, not the median of FLOPs / (ranks x peak x MFU) = {want}")
    if not close(row["measured"], float(np.median([s["step_ms"] for s in later])) / 1e3):
        failures.append(f"{name}: step_time_s measured {row['measured']} is not the median step")
    # The log's MFUs are its FLOPs over its step times, so the row agrees with itself.
    if not close(row["predicted"], row["measured"]):
        failures.append(f"{name}: step_time_s {row['predicted']} predicted, {row['measured']} measured from the same log "
                        f"({len(later)} steps)")


def check_bill(name, log, stderr, price, failures):
    recs = [json.loads(x) for x in open(log)]
    bills = [x for x in recs if x.get("event") == "bill"]
    if len(bills) != 1:
        failures.append(f"{name}: {len(bills)} bill events")
        return
    b = bills[0]
    steps = [x for x in recs if x.get("type") == "step"]
    want_flops = sum(s["flops"] for s in steps)
    if abs(b["model_flops"] - want_flops) > 1e-9 * want_flops or not (0 < b["mfu"] <= b["hfu"]):
        failures.append(f"{name}: bill {b} does not add up to the steps' {want_flops} FLOPs")
    if not close(b["mfu"], b["model_flops"] / (b["wall_s"] * b["devices"] * b["peak_flops"])):
        failures.append(f"{name}: the bill's MFU {b['mfu']} is not its FLOPs over wall-clock x devices x peak")
    if abs(b["device_hours"] - b["wall_s"] * b["devices"] / 3600) > 1e-12:
        failures.append(f"{name}: device-hours {b['device_hours']}")
    if price and abs(b.get("dollars", -1) - b["device_hours"] * price) > 1e-12:
        failures.append(f"{name}: dollars {b.get('dollars')} at {price}/h")
    if not price and "dollars" in b:
        failures.append(f"{name}: dollars without a price")
    if "bill: " not in stderr:
        failures.append(f"{name}: no summary line")


def check_profile(out, failures):
    p = json.load(open(os.path.join(out, "profile.json")))
    frac = p["ops_and_regions_fraction_of_step"]
    print(f"profile: booked rows {frac:.3f} of the step; ridge {p['ridge_flop_per_byte']:.1f} FLOP/byte; MFU {p['mfu']:.3f} HFU {p['hfu']:.3f}")
    # The ops and regions are timed inside the step, so however slow a loaded machine makes
    # them, they are each >= 0 and together at most the step (the slack: clock reads), the rest
    # is the "other" row, and the shares add up to 1.
    booked = [r for r in p["rows"] if r["op"] != "other"]
    for r in booked:
        if not r["seconds_per_step"] >= 0:
            failures.append(f"profile: {r['name']} takes {r['seconds_per_step']} s")
    total = sum(r["seconds_per_step"] for r in booked)
    if not (p["step_s"] > 0 and close(total, p["rows_booked_s"]) and close(frac, total / p["step_s"])):
        failures.append(f"profile: rows booked {total} s, reported {p['rows_booked_s']} s, fraction {frac} of {p['step_s']} s")
    if total > 1.25 * p["step_s"]:
        failures.append(f"profile: op and region times are {frac:.3f} of the step they are timed inside")
    other = [r for r in p["rows"] if r["op"] == "other"]
    if len(other) != 1 or not close(other[0]["seconds_per_step"], p["step_s"] - total, 1e-6):
        failures.append(f"profile: the untimed rest is {other}")
    if not close(sum(r["share"] for r in p["rows"]), 1, 1e-6):
        failures.append(f"profile: shares add up to {sum(r['share'] for r in p['rows'])}")
    # Where the ridge sits depends on what the machine measured (its matmul ceiling and triad
    # bandwidth), which another process on the cores can lower several times over; the ops'
    # intensities come from their shapes alone. So: the intensities are where they belong (large
    # matmuls tens of FLOP per byte or more, layernorm/GELU/AdamW a few at most), and each op's
    # bound is the side of the reported ridge its intensity is on.
    ridge = p["ridge_flop_per_byte"]
    if not ridge > 0:
        failures.append(f"profile: ridge {ridge}")
    ops = [r for r in p["rows"] if "intensity" in r]
    for r in ops:
        big_matmul = r["op"].startswith("matmul") and r["flops_per_step"] >= 1e8
        if big_matmul and r["intensity"] < 32:
            failures.append(f"profile: {r['name']} has intensity {r['intensity']:.1f} FLOP/byte (a large matmul: >= 32)")
        if r["op"].split("(")[0] in ("layernorm_forward", "layernorm_backward", "residual_layernorm_forward", "gelu_forward",
                                     "gelu_backward", "adamw") and r["intensity"] > 8:
            failures.append(f"profile: {r['name']} has intensity {r['intensity']:.1f} FLOP/byte (elementwise: <= 8)")
        if r["bound"] != ("compute" if r["intensity"] >= ridge else "memory"):
            failures.append(f"profile: {r['name']} (intensity {r['intensity']:.1f}) is {r['bound']}-bound against ridge {ridge:.1f}")
        # Above 1 is possible (cache-resident data beats the DRAM roof; a ceiling measured under
        # load), so only a positive, finite fraction is required.
        if not (0 < r["roof_fraction"] < math.inf):
            failures.append(f"profile: {r['name']} achieved {r['roof_fraction']} of its roof")
    names = {r["op"] for r in p["rows"]}
    for want in ("data loading", "optimizer host work", "adamw", "layernorm_backward"):
        if want not in names:
            failures.append(f"profile: no row {want}")
    # One step time divides both: their ratio is the FLOPs'.
    if not (p["hw_flops_per_step"] > p["model_flops_per_step"] and
            close(p["hfu"] / p["mfu"], p["hw_flops_per_step"] / p["model_flops_per_step"])):
        failures.append(f"profile: HFU {p['hfu']} / MFU {p['mfu']} is not the recomputed FLOPs' ratio "
                        f"{p['hw_flops_per_step']} / {p['model_flops_per_step']} (full recompute: above 1)")


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sixnd_files.write_shard(os.path.join(tmp, "train.bin"), np.random.default_rng(0).integers(0, 4096, 100000))
        # 360 channels and a hidden width of 1000: matrices whose sides are not multiples of the
        # packed GEMM's panel width.
        out, log, err = train(tmp, "d6", ["--model", "d6", "--n-embd", "360", "--mlp-hidden", "1000",
                                          "--vocab-size", "4096", "--batch", "4", "--seq-len", "64",
                                          "--steps", "5", "--profile", "3", "--recompute", "full",
                                          "--price-per-device-hour", "2.5"])
        print(err[err.find("profile:"):])
        rows = check(log)
        judge("d6 (360 channels) bf16 full recompute", rows, failures)
        check_times("d6", log, rows, failures)
        check_bill("d6", log, err, 2.5, failures)
        check_profile(out, failures)
        out, log, err = train(tmp, "d6_fp32", ["--model", "d6", "--vocab-size", "4096", "--batch", "2", "--seq-len", "64",
                                               "--steps", "3", "--dtype", "fp32", "--recompute", "selective",
                                               "--attention", "naive", "--total-batch-tokens", "256"])
        rows = check(log)
        judge("d6 fp32 selective naive accum 2", rows, failures)
        check_times("d6 fp32", log, rows, failures)
        check_bill("d6 fp32", log, err, 0, failures)
        out, log, err = train(tmp, "gpt2", ["--model", "gpt2-124m", "--batch", "1", "--seq-len", "64", "--steps", "3"])
        rows = check(log)
        judge("gpt2-124m bf16", rows, failures)
        check_times("gpt2-124m", log, rows, failures)
        # A plan made before the run (no log) counts what --check counts, weight copies included.
        r = subprocess.run([SIXND, "plan", "--model", "gpt2-124m", "--batch", "1", "--seq-len", "64", "--dtype", "bf16",
                            "--device", "cpu", "--tokens", "1e6", "--json"], capture_output=True, text=True, env=ENV)
        planned = json.loads(r.stdout)["memory"]["total"]
        print(f"gpt2-124m bf16: sixnd plan total {planned:.6g}, plan --check peak {rows['memory.peak']['predicted']:.6g}")
        if abs(planned / rows["memory.peak"]["predicted"] - 1) > 1e-9:
            failures.append(f"gpt2-124m: sixnd plan's total {planned} is not plan --check's peak "
                            f"{rows['memory.peak']['predicted']}")
    return sixnd_files.report(failures, "plan --check predicts the runs' memory and FLOPs; times, profile and bill add up")


if __name__ == "__main__":
    sys.exit(main())
