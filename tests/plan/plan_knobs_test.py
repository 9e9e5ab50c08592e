"""The planner follows the architecture knobs: for short runs of llama-tiny (rope, rmsnorm,
swiglu, grouped-query attention, untied, no biases) and speedrun-tiny (rope, rmsnorm, relu2,
qk-norm, untied, no biases) under each recompute policy and both attention kinds,
`sixnd plan --check` predicts the model-state bytes, the activations and workspace the memory
ledger measured, and the FLOPs per step the log reports, exactly (ratio 1), also with Muon's
Newton-Schulz buffer (llama-tiny, and tiny with --mlp-hidden 72, and tiny with every knob flag
given); `sixnd plan` before those runs, given train's model flags and --optimizer, predicts their
model states and their peak memory exactly (also where the run measured its matmul ceiling at
start-up, in buffers larger than the model); and `sixnd plan --model` gives the presets a
parameter count other than their GPT-2 shapes'."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
EXACT = ["memory.params", "memory.grads", "memory.adam_m", "memory.activations", "memory.workspace",
         "flops_per_step"]


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "t.bin")
        sixnd_files.write_shard(data, list(np.random.default_rng(0).integers(0, 101, 3000)))
        for preset in ("llama-tiny", "speedrun-tiny"):
            for recompute, attention in (("none", "naive"), ("selective", "flash"), ("full", "flash")):
                tag = f"{preset} {recompute} {attention}"
                log = os.path.join(tmp, f"{preset}_{recompute}.jsonl")
                subprocess.run([SIXND, "train", "--init", "random", "--model", preset, "--train-data", data,
                                "--device", "cpu", "--dtype", "bf16", "--batch", "2", "--seq-len", "32", "--steps", "2",
                                "--recompute", recompute, "--attention", attention, "--peak-tflops", "1",
                                "--out", os.path.join(tmp, f"{preset}_{recompute}"), "--log", log],
                               check=True, capture_output=True)
                r = subprocess.run([SIXND, "plan", "--check", log, "--json"], check=True, capture_output=True,
                                   text=True)
                rows = {x["quantity"]: x for x in json.loads(r.stdout)["rows"]}
                for q in EXACT:
                    if q not in rows or abs(rows[q]["ratio"] - 1) > 1e-9:
                        failures.append(f"{tag}: {q} predicted/measured {rows.get(q, {}).get('ratio')}")
                print(f"{tag}: activations {rows['memory.activations']['measured']:.0f} B, workspace "
                      f"{rows['memory.workspace']['measured']:.0f} B, predicted exactly")

        # Muon's Newton-Schulz buffer is sized by its widest matrix, which the knobs change: swiglu's
        # c_fc is [2H, C], and --mlp-hidden moves the MLP's matrices off [4C, C].
        # The same flags given to `sixnd plan` beforehand: train's model flags (a preset, knobs over
        # it) and --optimizer size the run as the ledger then measures it.
        knobs = ["--model", "tiny", "--n-layer", "3", "--n-head", "4", "--n-embd", "64", "--pos", "rope",
                 "--rope-theta", "500", "--norm", "rmsnorm", "--mlp", "swiglu", "--mlp-hidden", "96", "--qk-norm", "on",
                 "--n-kv-head", "2", "--tie-embeddings", "off", "--bias", "on", "--vocab-size", "101",
                 "--max-seq-len", "48"]
        for tag, extra, optimizer in (("llama-tiny muon", ["--model", "llama-tiny"], "muon"),
                                      ("tiny --mlp-hidden 72 muon", ["--model", "tiny", "--mlp-hidden", "72"], "muon"),
                                      ("tiny every knob muon", knobs, "muon"),
                                      ("tiny every knob adamw", knobs, "adamw")):
            name = tag.replace(" ", "_").replace("-", "")
            log = os.path.join(tmp, name + ".jsonl")
            common = ["--optimizer", optimizer, "--dtype", "fp32", "--batch", "2", "--seq-len", "16"] + extra
            # The last run's peak FLOP/s comes from the CPU, with the matmul ceiling measured at
            # start-up: buffers larger than this model, which must not show in its peak.
            peak = ["--peak-tflops", "1"] if optimizer == "muon" else []
            subprocess.run([SIXND, "train", "--init", "random", "--train-data", data, "--device", "cpu", "--steps", "2",
                            "--out", os.path.join(tmp, name), "--log", log] + peak + common,
                           check=True, capture_output=True)
            r = subprocess.run([SIXND, "plan", "--check", log, "--json"], check=True, capture_output=True, text=True)
            rows = {x["quantity"]: x for x in json.loads(r.stdout)["rows"]}
            for q in EXACT + ["memory.peak"]:
                if q not in rows or abs(rows[q]["ratio"] - 1) > 1e-9:
                    failures.append(f"{tag}: {q} predicted/measured {rows.get(q, {}).get('ratio')}")
            r = subprocess.run([SIXND, "plan", "--json"] + common, check=True, capture_output=True, text=True)
            mem = json.loads(r.stdout)["memory"]
            measured = rows["memory.peak"]["measured"]
            if mem["total"] != measured:
                failures.append(f"{tag}: plan's total {mem['total']:.0f} B, the run's peak {measured:.0f} B")
            if mem["model_states"] != rows["memory.model_states"]["measured"]:
                failures.append(f"{tag}: plan's model states {mem['model_states']:.0f} B, measured "
                                f"{rows['memory.model_states']['measured']:.0f} B")
            if (optimizer == "muon") != ("muon_workspace" in mem) or mem["optimizer"] != optimizer:
                failures.append(f"{tag}: plan's memory names optimizer {mem['optimizer']}, "
                                f"muon_workspace {'present' if 'muon_workspace' in mem else 'absent'}")
            print(f"{tag}: workspace predicted {rows['memory.workspace']['predicted']:.0f} B, measured "
                  f"{rows['memory.workspace']['measured']:.0f} B; plan beforehand: total {mem['total']:.0f} B, "
                  f"the run's peak {measured:.0f} B")

        def params(model):
            r = subprocess.run([SIXND, "plan", "--model", model, "--json"], check=True, capture_output=True, text=True)
            return json.loads(r.stdout)["compute"].get("params")
        for gpt2, other in (("d6", "llama-d6"), ("d6", "speedrun-d6")):
            a, b = params(gpt2), params(other)
            print(f"plan --model {gpt2}: N {a}; {other}: N {b}")
            if a is None or b is None or a == b:
                failures.append(f"plan gives {gpt2} and {other} the same matmul parameters ({a})")
    return sixnd_files.report(failures, "planner on knob models")


if __name__ == "__main__":
    sys.exit(main())
