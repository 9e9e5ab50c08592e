"""`sixnd plan --check` under mpirun -np 4 on the CPU: for ZeRO stages 0-3, with two micro-steps
per step, every rank's bytes sent per collective and its model-state bytes by category equal
the planner's prediction exactly. The bf16 runs put their matmuls on the packed GEMM
(SIXND_BF16_MATMUL=fp32, whatever the CPU), so that every rank's packed weight copies are
predicted too: per weight at stage 1, per ZeRO-3 gather slot at stage 3 (a one-block model
included, whose blocks use one slot). And Muon under ZeRO-1 at -np 3: every rank's workspace (its
own Newton-Schulz buffer, smaller on rank 0) and peak are predicted exactly."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
MPIRUN = sixnd_files.MPIRUN
ENV = sixnd_files.MPI_ENV
NP, B, T = 4, 1, 16


def without_ranks(log, failures):
    """The same log without its per-rank records: rank 0's bytes against the per-rank
    prediction, under rank 0's name, not as a one-process row."""
    cut = log + ".no_comm_ranks.jsonl"
    with open(log) as f, open(cut, "w") as g:
        for line in f:
            rec = json.loads(line)
            rec.pop("comm_ranks", None)
            g.write(json.dumps(rec) + "\n")
    c = subprocess.run([SIXND, "plan", "--check", cut, "--json"], capture_output=True, text=True, env=ENV, timeout=60)
    if c.returncode != 0:
        failures.append(f"without comm_ranks: plan --check failed: {c.stderr}")
        return
    rows = {x["quantity"]: x for x in json.loads(c.stdout)["rows"]}
    row = rows.get("rank0.comm.total")
    print(f"without comm_ranks: {row}")
    if row is None or row["predicted"] != row["measured"] or "one process" in row["formula"] or \
            "comm.bytes_per_rank_per_step" in rows:
        failures.append(f"without comm_ranks: rows {sorted(q for q in rows if 'comm' in q)}, rank0.comm.total {row}")


def main():
    if sixnd_files.mpirun_missing():
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sixnd_files.write_shard(os.path.join(tmp, "train.bin"), np.random.default_rng(0).integers(0, 101, 20000))
        for stage in (0, 1, 2, 3):
            runs = [("fp32", "tiny", [])]
            if stage in (1, 3):
                runs.append(("bf16", "d6", []))
            if stage == 3:
                runs.append(("bf16", "tiny", ["--n-layer", "1"]))
            for dtype, model, extra in runs:
                name = f"zero{stage}_{dtype}_{model}" + ("_1layer" if extra else "")
                log = os.path.join(tmp, name + ".jsonl")
                cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(NP), SIXND, "train", "--init", "random",
                       "--model", model, "--vocab-size", "101", "--train-data", os.path.join(tmp, "train.bin"),
                       "--device", "cpu", "--dtype", dtype, "--batch", str(B), "--seq-len", str(T), "--steps", "3",
                       "--zero", str(stage), "--total-batch-tokens", str(2 * NP * B * T), "--out", os.path.join(tmp, name),
                       "--log", log, "--peak-tflops", "1"] + extra
                env = dict(ENV, SIXND_BF16_MATMUL="fp32") if dtype == "bf16" else ENV
                r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
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
                copies = [x for x in rows if x["quantity"].endswith("memory.weight_copies")]
                totals = [x for x in comm if x["quantity"].endswith(".total")]
                print(f"{name}: bytes sent per rank per step predicted {totals[0]['predicted']:.0f}, measured "
                      f"{[int(x['measured']) for x in totals]}; model states rank 0 "
                      f"{sum(x['predicted'] for x in states if x['quantity'].startswith('rank0.')):.0f}")
                if copies:
                    print(f"{name}: weight copies rank 0 predicted {copies[0]['predicted']:.0f}, measured {copies[0]['measured']:.0f}")
                if len(totals) != NP or len(states) != 5 * NP or len(copies) != (NP if dtype == "bf16" else 0):
                    failures.append(f"{name}: {len(totals)} ranks of comm rows, {len(states)} state rows, "
                                    f"{len(copies)} weight-copy rows")
                for x in comm + states + copies:
                    if x["predicted"] != x["measured"]:
                        failures.append(f"{name}: {x['quantity']} predicted {x['predicted']} measured {x['measured']}")
                if stage > 0 and totals and totals[0]["predicted"] == 0:
                    failures.append(f"{name}: no bytes predicted")
                if name == "zero1_fp32_tiny":
                    without_ranks(log, failures)
        # Muon under ZeRO-1 at 3 ranks: each rank sizes its Newton-Schulz buffer from the matrices
        # its slice of each block touches; rank 0's misses c_fc, so its workspace is smaller.
        name = "zero1_fp32_tiny_muon_np3"
        log = os.path.join(tmp, name + ".jsonl")
        cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "3", SIXND, "train", "--init", "random",
               "--model", "tiny", "--vocab-size", "101", "--optimizer", "muon", "--zero", "1",
               "--train-data", os.path.join(tmp, "train.bin"), "--device", "cpu", "--dtype", "fp32",
               "--batch", str(B), "--seq-len", str(T), "--steps", "2", "--out", os.path.join(tmp, name),
               "--log", log, "--peak-tflops", "1"]
        r = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=900)
        c = subprocess.run([SIXND, "plan", "--check", log, "--json"], capture_output=True, text=True, env=ENV,
                           timeout=60) if r.returncode == 0 else None
        if r.returncode != 0:
            failures.append(f"{name}: training failed: {r.stderr[-1500:]}")
        elif c.returncode != 0:
            failures.append(f"{name}: plan --check failed: {c.stderr}")
        else:
            rows = {x["quantity"]: x for x in json.loads(c.stdout)["rows"]}
            want = [f"rank{i}.memory.{q}" for i in range(3) for q in ("workspace", "peak")]
            for q in want:
                if q not in rows or rows[q]["predicted"] != rows[q]["measured"]:
                    failures.append(f"{name}: {q} predicted/measured {rows.get(q, {}).get('ratio')}")
            # Rank 0's workspace once, as rank0.memory.workspace (it was also printed unnamed).
            if "memory.workspace" in rows:
                failures.append(f"{name}: an unnamed memory.workspace row beside the per-rank ones")
            ws = [rows.get(f"rank{i}.memory.workspace", {}).get("measured") for i in range(3)]
            print(f"{name}: workspace per rank measured {ws}, predicted "
                  f"{[rows.get(f'rank{i}.memory.workspace', {}).get('predicted') for i in range(3)]}")
    return sixnd_files.report(failures, f"plan --check: bytes sent and model states per rank under mpirun -np {NP}, Muon's workspace at -np 3")


if __name__ == "__main__":
    sys.exit(main())
