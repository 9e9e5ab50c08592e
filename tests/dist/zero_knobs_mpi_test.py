"""ZeRO 1/2/3 under `mpirun -np 2` on the CPU reproduce single-process training for the
llama-style preset (rope, rmsnorm, swiglu, grouped-query attention, untied head, no biases):
losses and final parameters to 1e-5 relative (FP32), per-rank model-state bytes by the ZeRO
table of the knob model's own layout; and `sixnd sample` decodes from the 2-rank stage-3
checkpoint (the KV cache with rope and shared kv heads)."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
from sixnd_files import rel  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
FP32_TOL = 1e-5
LEARNED = 0.85
GLOBAL_B, T, STEPS = 4, 16, 8
ENV = sixnd_files.MPI_ENV


def train(tmp, name, np_, stage):
    out, log = os.path.join(tmp, name), os.path.join(tmp, name + ".jsonl")
    cmd = [SIXND, "train", "--init", "random", "--model", "llama-tiny", "--seed", "5", "--train-data",
           os.path.join(tmp, "train.bin"), "--device", "cpu", "--dtype", "fp32", "--batch", str(GLOBAL_B // np_),
           "--seq-len", str(T), "--steps", str(STEPS), "--lr", "3e-3", "--warmup", "2", "--weight-decay", "0.1",
           "--grad-clip", "1.0", "--zero", str(stage), "--total-batch-tokens", str(GLOBAL_B * T),
           "--out", out, "--log", log, "--peak-tflops", "1", "--keep-last", "0"]
    recs = sixnd_files.run_train(cmd, name, log, np_, mpi=stage > 0)
    steps = [x for x in recs if x.get("type") == "step"]
    last = sixnd_files.last_checkpoint(out)
    return steps, sixnd_files.checkpoint_params(last), last


def main():
    if sixnd_files.mpirun_missing():
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sixnd_files.write_repeating_shard(os.path.join(tmp, "train.bin"), 400)
        base, base_params, base_ck = train(tmp, "base", 1, 0)
        meta = json.load(open(os.path.join(base_ck, "meta.json")))
        if sorted(base_params) != sorted(n for n, _, _ in sixnd_files.layout(meta["model"])[0]) or \
                "lm_head.weight" not in base_params or "wpe" in base_params:
            failures.append(f"checkpoint tensors {sorted(base_params)} are not the llama layout")
        print(f"one process: loss {base[0]['loss']:.3f} -> {base[-1]['loss']:.3f}")
        if base[-1]["loss"] > LEARNED * base[0]["loss"]:
            failures.append(f"one process did not learn: {base[0]['loss']:.3f} -> {base[-1]['loss']:.3f}")
        for stage in (1, 2, 3):
            name = f"np2_zero{stage}"
            steps, params, ck = train(tmp, name, 2, stage)
            e_loss = max(abs(a["loss"] - b["loss"]) / abs(b["loss"]) for a, b in zip(steps, base))
            e_param = max(rel(params[k], base_params[k]) for k in base_params)
            print(f"{name}: max loss rel {e_loss:.1e}, max param rel {e_param:.1e}")
            if len(steps) != STEPS or e_loss > FP32_TOL or e_param > FP32_TOL:
                failures.append(f"{name}: loss {e_loss:.2e} params {e_param:.2e} ({len(steps)} steps)")
            m = json.load(open(os.path.join(ck, "meta.json")))
            exp = sixnd_files.zero_table(m, stage, 2, 4, master=False)
            for r, mem in enumerate(steps[-1].get("memory_ranks", [steps[-1]["memory"]])):
                got = {k: int(mem[k]) for k in exp}
                if got != exp:
                    failures.append(f"{name} rank {r}: model-state bytes {got} != ZeRO table {exp}")
            if stage == 3:
                r = subprocess.run([SIXND, "sample", "--checkpoint", ck, "--prompt-ids", "1,2,3", "--max-tokens", "6",
                                    "--device", "cpu"], capture_output=True, text=True, env=ENV)
                print(f"sample from {name}: exit {r.returncode}")
                if r.returncode != 0:
                    failures.append(f"sample from the llama checkpoint failed: {r.stderr.strip()[-300:]}")
    return sixnd_files.report(failures, "ZeRO on the llama-style preset")


if __name__ == "__main__":
    sys.exit(main())
