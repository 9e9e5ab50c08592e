"""`sixnd plan --check` under mpirun -np 4 on the CPU: for ZeRO stages 0-3, with two micro-steps
per step, every rank's bytes sent per collective and its model-state bytes by category equal
the planner's prediction exactly."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
MPIRUN = shutil.which("mpirun")
ENV = sixnd_files.MPI_ENV
NP, B, T = 4, 1, 16


def main():
    if MPIRUN is None:
        print("SKIP: mpirun not found (Debian's openmpi-bin)")
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sixnd_files.write_shard(os.path.join(tmp, "train.bin"), np.random.default_rng(0).integers(0, 101, 20000))
        for stage in (0, 1, 2, 3):
            for dtype, model in (("fp32", "tiny"), ("bf16", "d6")) if stage in (1, 3) else (("fp32", "tiny"),):
                name = f"zero{stage}_{dtype}_{model}"
                log = os.path.join(tmp, name + ".jsonl")
                cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(NP), SIXND, "train", "--init", "random",
                       "--model", model, "--vocab-size", "101", "--train-data", os.path.join(tmp, "train.bin"),
                       "--device", "cpu", "--dtype", dtype, "--batch", str(B), "--seq-len", str(T), "--steps", "3",
                       "--zero", str(stage), "--total-batch-tokens", str(2 * NP * B * T), "--out", os.path.join(tmp, name),
                       "--log", log, "--peak-tflops", "1"]
                r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=900)
                if r.returncode != 0:
                    failures.append(f"{name}: training failed: {r.stderr[-1500:]}")
                    continue
                c = subprocess.run([SIXND, "plan", "--check", log, "--json"], capture_output=True, text=True, env=ENV, timeout=60)
                if c.returncode != 0:
                    failures.append(f"{name}: plan --check failed: {c.stderr}")
                    continue
                rows = json.loads(c.stdout)["rows"]
                comm = [x for x in rows if ".comm." in x["quantity"]]
                states = [x for x in rows if x["quantity"].split(".", 1)[-1] in
                          ("memory.params", "memory.grads", "memory.master", "memory.adam_m", "memory.adam_v")]
                totals = [x for x in comm if x["quantity"].endswith(".total")]
                print(f"{name}: bytes sent per rank per step predicted {totals[0]['predicted']:.0f}, measured "
                      f"{[int(x['measured']) for x in totals]}; model states rank 0 "
                      f"{sum(x['predicted'] for x in states if x['quantity'].startswith('rank0.')):.0f}")
                if len(totals) != NP or len(states) != 5 * NP:
                    failures.append(f"{name}: {len(totals)} ranks of comm rows, {len(states)} state rows")
                for x in comm + states:
                    if x["predicted"] != x["measured"]:
                        failures.append(f"{name}: {x['quantity']} predicted {x['predicted']} measured {x['measured']}")
                if stage > 0 and totals and totals[0]["predicted"] == 0:
                    failures.append(f"{name}: no bytes predicted")
    return sixnd_files.report(failures, f"plan --check: bytes sent and model states per rank under mpirun -np {NP}")


if __name__ == "__main__":
    sys.exit(main())
