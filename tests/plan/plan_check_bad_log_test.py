"""`sixnd plan --check` on run logs that no run could have written: a tiny real run's log (with
its eval, inject, checkpoint and bill events, and the other event kinds appended as the trainer
writes them) with one field broken at a time (a negative batch, a zero sequence length, an
unknown dtype, a negative step time, a missing field, an event's field of the wrong type, ...).
Each ends with one error line naming FILE:LINE of the record and the field, exit 1, and no
table; a value quoted in the error is cut as core/error.h's excerpt() cuts it; the unbroken
log, with an event of a kind this sixnd does not know, still checks."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
from bad_input import Case, run_cases, SIXND  # noqa: E402

ENV = {"OMP_NUM_THREADS": "1", "ASAN_OPTIONS": "detect_leaks=0"}


def main():
    with tempfile.TemporaryDirectory(prefix="sixnd_plan_bad_log_") as tmp:
        return run(tmp)


def run(tmp):
    data = os.path.join(tmp, "train.bin")
    sixnd_files.write_shard(data, [(i * 7) % 64 for i in range(4000)])
    log = os.path.join(tmp, "run.jsonl")
    r = subprocess.run([SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "64", "--max-seq-len", "16",
                        "--device", "cpu", "--dtype", "fp32", "--train-data", data, "--batch", "2", "--seq-len", "8",
                        "--steps", "3", "--peak-tflops", "1", "--out", os.path.join(tmp, "run"), "--log", log,
                        "--val-data", data, "--eval-every", "2", "--inject-junk-batch", "2"],
                       capture_output=True, text=True, env=dict(os.environ, **ENV), timeout=300)
    if r.returncode != 0:
        print(f"FAILED: setup run: {r.stderr[-2000:]}")
        return 1
    records = [json.loads(x) for x in open(log)]
    # The kinds a short run does not write, as train/trainer.cpp writes them; and one that a
    # newer sixnd might (its fields are its own).
    def event(kind, step, **fields):
        return dict(fields, type="event", event=kind, step=step)
    records += [
        event("spike", 2, fired_on=["grad_norm"], loss=4.1, loss_mean=4.2, loss_std=0.05, loss_z=-2.0, grad_norm=9.5,
              grad_mean=1.0, grad_std=0.5, grad_z=17.0, window=128, z_loss=6.0, z_grad=6.0, action="skip",
              report="run/spikes/step-0000002.json"),
        event("skip", 2, reason="spike", loss=4.1, grad_norm=9.5, consecutive=1, fired_on=["grad_norm"]),
        event("skip", 3, reason="non_finite", loss=None, grad_norm=None, consecutive=1),
        event("rollback", 3, **{"from": 3, "to": 2, "batches_skipped": 2, "tokens_skipped": 32, "source": "memory",
                                "rollbacks": 1}),
        event("eval_task", 3, task="hellaswag", items=10, acc=0.3, acc_norm=0.4, comm_bytes=0),
        event("profile", 3, path="run/profile.json", mfu=0.01, hfu=0.02),
        event("stop", 3, reason="signal", signal=15, last_checkpoint="run/step-0000003"),
        event("from_a_newer_sixnd", 3, anything=[1, "two", None]),
    ]
    with open(log, "w") as f:
        f.writelines(json.dumps(x) + "\n" for x in records)
    header = next(i for i, x in enumerate(records) if x.get("type") == "header")
    steps = [i for i, x in enumerate(records) if x.get("type") == "step"]
    events = {}
    for i, x in enumerate(records):
        if x.get("type") == "event":
            events.setdefault(x["event"], i)
    for kind in ("eval", "inject", "checkpoint", "bill"):
        if kind not in events:
            print(f"FAILED: setup run: no {kind} event in {log}")
            return 1

    def broken(name, index, path, value):
        """The log with records[index] at `path` (keys, '.'-joined) set to value, or removed
        when value is None; returns the file and the record's line."""
        recs = json.loads(json.dumps(records))
        *outer, key = path.split(".")
        obj = recs[index]
        for k in outer:
            obj = obj[k]
        if value is None:
            del obj[key]
        else:
            obj[key] = value
        p = os.path.join(tmp, name + ".jsonl")
        with open(p, "w") as f:
            f.writelines(json.dumps(x) + "\n" for x in recs)
        return p, f"{p}:{index + 1}"

    def check(name, index, path, value, words):
        p, where = broken(name, index, path, value)
        return Case(name, ["plan", "--check", p], [where + ": "] + words, unchanged=[p])

    h, last, mid = header, steps[-1], steps[1]
    cases = [
        check("negative batch", h, "config.batch", -5, ["config.batch", "positive integer", "-5"]),
        check("zero seq_len", h, "config.seq_len", 0, ["config.seq_len", "0"]),
        check("seq_len over the context", h, "config.seq_len", 4096, ["config.seq_len", "[1, 16]", "4096"]),
        check("fractional batch", h, "config.batch", 2.5, ["config.batch", "integer", "2.5"]),
        check("batch as text", h, "config.batch", "2", ["config.batch", "integer"]),
        check("missing batch", h, "config.batch", None, ["config.batch", "missing"]),
        check("zero world size", h, "world_size", 0, ["world_size", "positive integer"]),
        check("zero accumulation", h, "grad_accum_steps", 0, ["grad_accum_steps", "positive integer"]),
        check("ZeRO stage 4", h, "zero_stage", 4, ["zero_stage", "[0, 3]"]),
        check("unknown dtype", h, "config.dtype", "fp8", ["config.dtype", "fp32, bf16", "fp8"]),
        check("unknown recompute", h, "config.recompute", "most", ["config.recompute", "most"]),
        check("unknown attention", h, "config.attention", "sparse", ["config.attention", "sparse"]),
        check("master weights as text", h, "config.master_weights", "on", ["config.master_weights", "true or false"]),
        check("batch tokens off", h, "batch_tokens", 99, ["batch_tokens", "99"]),
        check("negative peak", h, "peak_flops", -1, ["peak_flops", "non-negative"]),
        check("zero unit align", h, "layout.unit_align", 0, ["layout.unit_align", "positive integer"]),
        check("config not an object", h, "config", [1], ["config", "object"]),
        check("negative step time", mid, "step_ms", -3.5, ["step_ms", "positive", "-3.5"]),
        check("zero step time", mid, "step_ms", 0, ["step_ms", "positive"]),
        check("mfu as text", mid, "mfu", "high", ["mfu", "number"]),
        check("loss as text", mid, "loss", "abc", ["loss", "number", "abc"]),
        check("learning rate as a list", last, "lr", [1], ["lr", "number"]),
        check("gradient norm as text", mid, "grad_norm", "big", ["grad_norm", "number"]),
        check("step as text", mid, "step", "2", ["step", "integer"]),
        check("tokens negative", last, "tokens", -4, ["tokens", "non-negative"]),
        check("memory category as text", last, "memory.activations", "lots", ["memory.activations", "number"]),
        check("negative peak memory", last, "memory.peak", -3, ["memory.peak", "non-negative"]),
        check("missing workspace", last, "memory.workspace", None, ["memory.workspace", "missing"]),
        check("negative flops", last, "flops", -1e9, ["flops", "non-negative"]),
        check("negative comm bytes", last, "comm_bytes", -8, ["comm_bytes", "non-negative"]),
        check("memory ranks for another world", last, "memory_ranks", [{}, {}], ["memory_ranks", "world_size 1"]),
        # A quoted value is cut to excerpt()'s 60 characters: the JSON string's quote and 59 x.
        check("a long value quoted in part", h, "config.dtype", "x" * 100, ["config.dtype", '"' + "x" * 59 + "..."]),
    ]
    e = events
    cases += [
        check("event kind as a number", e["eval"], "event", 7, ["event", "string"]),
        check("event without its step", e["checkpoint"], "step", None, ["step", "missing"]),
        check("event at a negative step", e["bill"], "step", -1, ["step", "non-negative integer", "-1"]),
        check("eval loss as text", e["eval"], "val_loss", "low", ["the eval event's val_loss", "number", "low"]),
        check("eval without its loss", e["eval"], "val_loss", None, ["the eval event's val_loss", "missing"]),
        check("eval over no batches", e["eval"], "batches", 0, ["the eval event's batches", "positive integer"]),
        check("eval bytes negative", e["eval"], "comm_bytes", -8, ["the eval event's comm_bytes", "non-negative"]),
        check("inject without its fault", e["inject"], "fault", None, ["the inject event's fault", "missing"]),
        check("checkpoint directory as a number", e["checkpoint"], "dir", 5, ["the checkpoint event's dir", "string"]),
        check("bill on no devices", e["bill"], "devices", 0, ["the bill event's devices", "positive integer"]),
        check("bill MFU as text", e["bill"], "mfu", "half", ["the bill event's mfu", "number", "half"]),
        check("bill without wall-clock", e["bill"], "wall_s", None, ["the bill event's wall_s", "missing"]),
        check("spike on numbers", e["spike"], "fired_on", [1], ["the spike event's fired_on[0]", "string"]),
        check("spike fired_on as text", e["spike"], "fired_on", "loss", ["the spike event's fired_on", "array"]),
        check("spike z as text", e["spike"], "grad_z", "high", ["the spike event's grad_z", "finite number", "high"]),
        check("spike without its loss", e["spike"], "loss", None, ["the spike event's loss", "missing"]),
        check("skip count zero", e["skip"], "consecutive", 0, ["the skip event's consecutive", "positive integer"]),
        check("skip without its norm", e["skip"], "grad_norm", None, ["the skip event's grad_norm", "missing"]),
        check("rollback target as text", e["rollback"], "to", "2", ["the rollback event's to", "integer"]),
        check("rollback without its source", e["rollback"], "source", None, ["the rollback event's source", "missing"]),
        check("task accuracy negative", e["eval_task"], "acc", -0.1, ["the eval_task event's acc", "non-negative"]),
        check("profile without its path", e["profile"], "path", None, ["the profile event's path", "missing"]),
        check("stop without its reason", e["stop"], "reason", None, ["the stop event's reason", "missing"]),
        check("stop signal as text", e["stop"], "signal", "TERM", ["the stop event's signal", "integer"]),
    ]
    header_only = os.path.join(tmp, "header_only.jsonl")
    with open(header_only, "w") as f:
        f.write(json.dumps(records[header]) + "\n")
    cases.append(Case("header without steps", ["plan", "--check", header_only],
                      [f"{header_only}:{header + 1}: ", "no step records"]))
    not_object = os.path.join(tmp, "not_object.jsonl")
    with open(not_object, "w") as f:
        f.write(json.dumps(records[header]) + "\n[1, 2]\n" + json.dumps(records[steps[0]]) + "\n")
    cases.append(Case("a record that is not an object", ["plan", "--check", not_object], [f"{not_object}:2: ", "JSON object"]))
    # A killed run's log ends in a torn line: checked without it, with a warning. Torn anywhere
    # else it is damage; and what the error quotes of the line stays one line of valid UTF-8.
    whole = open(log).read()
    torn_last = os.path.join(tmp, "torn_last.jsonl")
    with open(torn_last, "w") as f:
        f.write(whole + '{"type":"step","step":4,"loss":3.1')

    def warned_of_torn_line():
        r = subprocess.run([SIXND, "plan", "--check", torn_last], capture_output=True, text=True,
                           env=dict(os.environ, **ENV), timeout=120)
        want = f"{torn_last}:{len(records) + 1}"
        if r.returncode != 0 or want not in r.stderr or "torn" not in r.stderr or "ratio" not in r.stdout:
            return f"torn last line: exit {r.returncode}, stderr {r.stderr.strip()[-300:]}"
        return None
    cases.append(Case("a torn last line is skipped", ["plan", "--check", torn_last], [], exit_code=0,
                      check=warned_of_torn_line))
    torn_mid = os.path.join(tmp, "torn_mid.jsonl")
    lines = whole.splitlines(keepends=True)
    with open(torn_mid, "wb") as f:
        f.write("".join(lines[:steps[1]]).encode() + b'{"type":"step","st\xff\n' + "".join(lines[steps[1]:]).encode())
    cases.append(Case("a torn line before the last", ["plan", "--check", torn_mid],
                      [f"{torn_mid}:{steps[1] + 1}: ", "not the last line", "\\xff"]))
    cases.append(Case("a directory", ["plan", "--check", tmp], [tmp + ": ", "is a directory"]))
    cases.append(Case("a device", ["plan", "--check", "/dev/zero"], ["/dev/zero: ", "is a device"], timeout=30))
    long_name = os.path.join(tmp, "n" * 300)
    cases.append(Case("a name too long", ["plan", "--check", long_name], [long_name + ": ", "cannot open the run log: File name too long"]))
    # RunLog writes its header first, and refuses to append to a file that does not open with one.
    step_first = os.path.join(tmp, "step_first.jsonl")
    with open(step_first, "w") as f:
        f.write(lines[steps[0]] + whole)
    cases.append(Case("a step before the header", ["plan", "--check", step_first],
                      [f"{step_first}:1: ", "not a sixnd run log", "not a header"]))
    empty = os.path.join(tmp, "empty.jsonl")
    open(empty, "w").close()
    cases.append(Case("an empty file", ["plan", "--check", empty], [empty + ": ", "not a sixnd run log", "no records"]))
    cases.append(Case("the unbroken log", ["plan", "--check", log], [], exit_code=0))
    for c in cases:
        c.env = ENV
    return run_cases(cases, "sixnd plan --check: impossible run logs")


if __name__ == "__main__":
    sys.exit(main())
