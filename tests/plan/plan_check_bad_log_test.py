"""`sixnd plan --check` on run logs that no run could have written: a tiny real run's log with
one field broken at a time (a negative batch, a zero sequence length, an unknown dtype, a
negative step time, a missing field, ...). Each ends with one error line naming FILE:LINE of the
record and the field, exit 1, and no table; a value quoted in the error is cut as core/error.h's
excerpt() cuts it; the unbroken log still checks."""
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
                        "--steps", "3", "--peak-tflops", "1", "--out", os.path.join(tmp, "run"), "--log", log],
                       capture_output=True, text=True, env=dict(os.environ, **ENV), timeout=300)
    if r.returncode != 0:
        print(f"FAILED: setup run: {r.stderr[-2000:]}")
        return 1
    records = [json.loads(x) for x in open(log)]
    header = next(i for i, x in enumerate(records) if x.get("type") == "header")
    steps = [i for i, x in enumerate(records) if x.get("type") == "step"]

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
    header_only = os.path.join(tmp, "header_only.jsonl")
    with open(header_only, "w") as f:
        f.write(json.dumps(records[header]) + "\n")
    cases.append(Case("header without steps", ["plan", "--check", header_only],
                      [f"{header_only}:{header + 1}: ", "no step records"]))
    not_object = os.path.join(tmp, "not_object.jsonl")
    with open(not_object, "w") as f:
        f.write(json.dumps(records[header]) + "\n[1, 2]\n" + json.dumps(records[steps[0]]) + "\n")
    cases.append(Case("a record that is not an object", ["plan", "--check", not_object], [f"{not_object}:2: ", "JSON object"]))
    cases.append(Case("the unbroken log", ["plan", "--check", log], [], exit_code=0))
    for c in cases:
        c.env = ENV
    return run_cases(cases, "sixnd plan --check: impossible run logs")


if __name__ == "__main__":
    sys.exit(main())
