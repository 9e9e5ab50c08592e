"""The spike report (OUT/spikes/step-NNNNNNN.json) is right by construction: an injected LR spike
is flagged on the step after it with learning_rate.injected and lr_ratio at the factor; a junk
batch is flagged on its own step with batch.injected_junk, high per-row losses, rows whose shard
and offset lead to the exact junk tokens, and the rows they replaced; every row of a clean batch
names the shard and offset its tokens came from (shuffle off: known in advance); the determinism
re-check is bitwise equal on the CPU; the units, trigger, attention-logit and run fields are
filled in; the ranked causes put learning_rate, then data_state, first, each with a `next` command that
runs as written, and a text version lies beside each report."""
import json
import os
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, OMP_NUM_THREADS="1", ASAN_OPTIONS="detect_leaks=0")
B, T, V = 4, 16, 101


def train(tmp, name, *extra):
    out = os.path.join(tmp, name)
    log = out + ".jsonl"
    cmd = [SIXND, "train", "--init", "random", "--model", "tiny", "--seed", "5", "--device", "cpu", "--dtype", "fp32",
           "--train-data", os.path.join(tmp, "train.bin"), "--shuffle", "off", "--batch", str(B), "--seq-len", str(T),
           "--steps", "26", "--lr", "3e-3", "--schedule", "constant", "--warmup", "2", "--peak-tflops", "1",
           "--spike-window", "8", "--checkpoint-every", "5", "--keep-last", "0", "--out", out, "--log", log] + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"{name} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    recs = [json.loads(x) for x in open(log)]
    return out, recs


def report_of(out, step):
    path = os.path.join(out, "spikes", f"step-{step:07d}.json")
    return json.load(open(path)) if os.path.exists(path) else None


def shard_tokens(path):
    raw = np.fromfile(path, dtype=np.int32, count=256)
    return np.fromfile(path, dtype=np.uint16 if raw[1] == 1 else np.uint32, offset=1024)


def common_checks(rep, out, step, failures, what):
    if rep["step"] != step:
        failures.append(f"{what}: step {rep['step']}")
    if rep["action"] != "warn":
        failures.append(f"{what}: action {rep['action']}")
    run = rep["run"]
    ck = os.path.join(out, "checkpoints")
    want_before = os.path.join(ck, f"step-{(step - 1) // 5 * 5:08d}")
    want_earlier = os.path.join(ck, f"step-{(step - 1) // 5 * 5 - 5:08d}")
    if (run["checkpoint_before"], run["checkpoint_earlier"]) != (want_before, want_earlier):
        failures.append(f"{what}: checkpoints {run['checkpoint_before']}, {run['checkpoint_earlier']}")
    if (run["seq_len"], run["batch"], run["world"], run["accum"]) != (T, B, 1, 1):
        failures.append(f"{what}: run {run}")
    tr = rep["trigger"]
    if not tr["fired_on"] or tr["window"] != 8 or tr["z_loss"] != 6:
        failures.append(f"{what}: trigger {tr}")
    for stat, z in (("loss", "loss_z"), ("grad_norm", "grad_z")):
        if stat in tr["fired_on"] and not tr[z] > 6:
            failures.append(f"{what}: fired on {stat} with z {tr[z]}")
    units = [u["unit"] for u in rep["units"]]
    if units != ["embeddings", "h.0", "h.1", "ln_f"]:
        failures.append(f"{what}: units {units}")
    for u in rep["units"]:
        if not (u["grad_norm"] > 0 and u["grad_norm_mean"] > 0 and u["adam_v_max"] >= u["adam_v_min"] > 0
                and u["update_ratio"] > 0):
            failures.append(f"{what}: unit {u}")
    d = rep["determinism"]
    if not d["bitwise_equal"] or d["loss"] != d["loss_again"]:
        failures.append(f"{what}: determinism {d}")
    att = rep["attention_logits"]
    if (att is None or len(att["max_per_layer"]) != 2 or len(att["mean_per_layer"]) != 2
            or abs(att["max_ratio"] - max(a / m for a, m in zip(att["max_per_layer"], att["mean_per_layer"]))) > 1e-9):
        failures.append(f"{what}: attention_logits {att}")
    if not os.path.exists(os.path.join(out, "spikes", f"step-{step:07d}.txt")):
        failures.append(f"{what}: no text report")
    if not all(isinstance(rep["run"].get(k), want) for k, want in (("run_id", str), ("config", dict), ("model", dict))):
        failures.append(f"{what}: the report's run lacks its id, options or model: {sorted(rep['run'])}")
    if len(rep.get("causes", [])) != 5:
        failures.append(f"{what}: causes {rep.get('causes')}")
    if len(rep["batch"]["rows"]) != B:
        failures.append(f"{what}: {len(rep['batch']['rows'])} rows")


def run_next_commands(rep, failures):
    """Every cause's `next` runs as written (the run's own flags, the model's for a fresh run);
    a CPU run's hardware re-check is its replay again, which needs no other device."""
    for c in rep["causes"]:
        cmd = c["next"]
        if c["cause"] == "hardware_nondeterminism" and "--device cuda" in cmd:
            failures.append(f"next of a CPU run's hardware re-check asks for a GPU: {cmd}")
        if "<" in cmd:
            failures.append(f"next of {c['cause']} has a placeholder: {cmd}")
            continue
        words = shlex.split(cmd)
        if words[:2] == ["sixnd", "train"]:
            # The run's schedule, precision and stopping point; no fault injection; a changed knob
            # given once.
            for want in ("--steps 26", "--dtype fp32", "--schedule constant", "--seed 5", "--shuffle off"):
                if want not in cmd:
                    failures.append(f"next of {c['cause']} lacks {want}: {cmd}")
            if "--inject" in cmd or len(set(w for w in words if w.startswith("--"))) != len(
                    [w for w in words if w.startswith("--")]):
                failures.append(f"next of {c['cause']} injects a fault or repeats a flag: {cmd}")
        if c["cause"] == "optimizer_state" and ("--beta2 0.95" not in cmd or "--eps 1e-06" not in cmd):
            failures.append(f"next of optimizer_state: expected the run's --beta2 0.95 and --eps 1e-06: {cmd}")
        r = subprocess.run([SIXND, *words[1:]], capture_output=True, text=True, env=ENV, timeout=300)
        print(f"next of {c['cause']}: exit {r.returncode}: {cmd[:120]}...")
        if r.returncode != 0:
            failures.append(f"next of {c['cause']} failed ({r.returncode}): {cmd}\n{r.stderr.strip()[-600:]}")


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(0)
        data = os.path.join(tmp, "train.bin")
        sixnd_files.write_shard(data, np.tile(rng.integers(0, V, 23), 700))
        stream = shard_tokens(data)

        # An LR spike x100 at step 20: the loss of step 21 is the first to see its update.
        out, recs = train(tmp, "lr", "--inject-lr-spike", "20:100")
        rep = report_of(out, 21)
        if rep is None:
            failures.append(f"lr: no report for step 21; spikes at {[r['step'] for r in recs if r.get('event') == 'spike']}")
        else:
            common_checks(rep, out, 21, failures, "lr")
            lr = rep["learning_rate"]
            if not lr["injected"] or abs(lr["lr_ratio"] - 100) > 1e-3 or abs(lr["last_update_lr"] - 0.3) > 1e-6:
                failures.append(f"lr: learning_rate {lr}")
            if lr["schedule"] != "constant" or lr["phase"] != "constant" or abs(lr["base_lr"] - 3e-3) > 1e-9:
                failures.append(f"lr: schedule fields {lr}")
            if rep["batch"]["injected_junk"]:
                failures.append("lr: batch marked junk")
            # Shuffle off: step k's row b is sample (k-1)*B + b, tokens from offset sample*T.
            for row in rep["batch"]["rows"]:
                want = ((21 - 1) * B + row["row"]) * T
                if row["shard"] != data or row["offset"] != want or row["micro"] != 0 or row["rank"] != 0:
                    failures.append(f"lr: row {row}, expected offset {want}")
            if rep["causes"][0]["cause"] != "learning_rate":
                failures.append(f"lr: causes ranked {[c['cause'] for c in rep['causes']]}")
            print(f"lr spike: trigger {rep['trigger']['fired_on']} loss z {rep['trigger']['loss_z']:.1f} "
                  f"grad z {rep['trigger']['grad_z']:.1f}, lr_ratio {rep['learning_rate']['lr_ratio']:.1f}")
            run_next_commands(rep, failures)
        ev = [r for r in recs if r.get("event") == "spike"]
        if not ev or ev[0]["step"] != 21 or ev[0]["action"] != "warn" or "loss_z" not in ev[0] or "report" not in ev[0]:
            failures.append(f"lr: spike events {ev[:1]}")

        # A junk batch at step 20.
        out, recs = train(tmp, "junk", "--inject-junk-batch", "20")
        rep = report_of(out, 20)
        if rep is None:
            failures.append("junk: no report for step 20")
        else:
            common_checks(rep, out, 20, failures, "junk")
            b = rep["batch"]
            if not b["injected_junk"] or rep["learning_rate"]["injected"] or rep["learning_rate"]["lr_ratio"] != 1:
                failures.append(f"junk: flags {b['injected_junk']} {rep['learning_rate']}")
            for row in b["rows"]:
                if not row["loss"] > 2 * b["recent_loss_mean"]:
                    failures.append(f"junk: row loss {row['loss']} against recent mean {b['recent_loss_mean']}")
                want = ((20 - 1) * B + row["row"]) * T
                if row["replaced"] != {"shard": data, "offset": want}:
                    failures.append(f"junk: replaced {row['replaced']}")
                toks = shard_tokens(row["shard"])[row["offset"]:row["offset"] + T + 1]
                if len(toks) != T + 1 or toks.max() >= V or np.array_equal(toks, stream[want:want + T + 1]):
                    failures.append(f"junk: the row's tokens {toks[:5]}... are not junk")
            if b["per_token_loss_max"] < max(r["loss"] for r in b["rows"]):
                failures.append("junk: per_token_loss_max below a row mean")
            if rep["causes"][0]["cause"] != "data_state":
                failures.append(f"junk: causes ranked {[c['cause'] for c in rep['causes']]}")
            print(f"junk batch: loss {b['loss']:.3f} against recent mean {b['recent_loss_mean']:.3f}")
    return sixnd_files.report(failures, "spike reports: LR spike and junk batch fields by construction")


if __name__ == "__main__":
    sys.exit(main())
