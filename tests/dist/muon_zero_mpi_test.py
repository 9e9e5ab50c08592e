"""Muon under ZeRO on the CPU (MPI): at 2 ranks every stage reproduces single-process Muon
training with the same global batch (FP32: losses and final parameters to 1e-5 relative), the
extra traffic is exactly the documented FP32 all-gather of every block unit at stages 1-3
(4 bytes x unit x (n-1)/n per rank per step, against an AdamW run at the same stage) and
`sixnd plan --check` predicts it and Muon's workspace exactly, and a
checkpointed Muon run resumes exactly: bitwise in one process and at np=2 stage 2, and to 1e-5
when resharded (np=2 stage 3 -> one process)."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402
from sixnd_files import rel  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
FP32_TOL = 1e-5
LEARNED = 0.8
GLOBAL_B, T, STEPS = 4, 16, 8
ENV = sixnd_files.MPI_ENV


def plan_check(log):
    """`sixnd plan --check`'s rows by quantity."""
    r = subprocess.run([SIXND, "plan", "--check", log, "--json"], capture_output=True, text=True, env=ENV, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"plan --check {log}: {r.stderr}")
    return {row["quantity"]: row for row in json.loads(r.stdout)["rows"]}


def train(tmp, name, np_, stage, optimizer="muon", extra=()):
    out = os.path.join(tmp, name)
    log = os.path.join(tmp, name + ".jsonl")
    cmd = [SIXND, "train", "--init", "random", "--model", "tiny", "--seed", "5", "--train-data",
           os.path.join(tmp, "train.bin"), "--device", "cpu", "--dtype", "fp32", "--batch", str(GLOBAL_B // np_),
           "--seq-len", str(T), "--steps", str(STEPS), "--lr", "3e-3", "--warmup", "2", "--weight-decay", "0.1",
           "--optimizer", optimizer, "--grad-clip", "1.0",
           "--zero", str(stage), "--total-batch-tokens", str(2 * GLOBAL_B * T), "--out", out, "--log", log,
           "--peak-tflops", "1", "--keep-last", "0"] + list(extra)
    if optimizer == "muon":  # train refuses Muon's knobs under AdamW
        cmd += ["--muon-lr", "0.03", "--muon-weight-decay", "0.05"]
    recs = sixnd_files.run_train(cmd, name, log, np_, mpi=stage > 0)
    return out, recs[0], [x for x in recs if x.get("type") == "step"]


def final_params(out):
    return sixnd_files.determined(sixnd_files.checkpoint_params(sixnd_files.last_checkpoint(out)))


def main():
    if sixnd_files.mpirun_missing():
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sixnd_files.write_repeating_shard(os.path.join(tmp, "train.bin"))

        base_out, header, base = train(tmp, "base", 1, 0)
        base_loss = [s["loss"] for s in base]
        base_params = final_params(base_out)
        print(f"one process muon: loss {base_loss[0]:.3f} -> {base_loss[-1]:.3f}, Newton-Schulz "
              f"{header['optimizer_flops_per_step']:.3g} FLOP/step")
        if base_loss[-1] > LEARNED * base_loss[0]:
            failures.append(f"muon one process did not learn: {base_loss[0]:.3f} -> {base_loss[-1]:.3f}")

        _, spans = sixnd_files.layout(header["model"], header["layout"]["unit_align"])
        blocks = sum(e - b for b, e in spans[1:-1])  # the units holding Muon matrices
        for stage in (0, 1, 2, 3):
            name = f"np2_zero{stage}"
            out, _, steps = train(tmp, name, 2, stage)
            e_loss = max(abs(a["loss"] - b) / abs(b) for a, b in zip(steps, base_loss))
            params = final_params(out)
            e_param = max(rel(params[k], base_params[k]) for k in base_params)
            print(f"{name}: max loss rel {e_loss:.1e}, max param rel {e_param:.1e}, comm bytes/step "
                  f"{steps[-1]['comm_bytes']}")
            if len(steps) != STEPS or e_loss > FP32_TOL or e_param > FP32_TOL:
                failures.append(f"{name}: loss {e_loss:.2e} params {e_param:.2e} ({len(steps)} steps)")
            # The planner predicts Muon's extra bytes and buffers exactly.
            rows = plan_check(os.path.join(tmp, name + ".jsonl"))
            for q in [q for q in rows if q.endswith(".comm.all_gather") or q.endswith("memory.workspace")]:
                if rows[q]["predicted"] != rows[q]["measured"]:
                    failures.append(f"{name}: plan --check {q} predicted {rows[q]['predicted']} measured {rows[q]['measured']}")
            if stage == 1:
                _, _, adam = train(tmp, "adamw_np2_zero1", 2, 1, optimizer="adamw")
                extra = [m["all_gather"] - a["all_gather"] for m, a in zip(steps[-1]["comm_ranks"], adam[-1]["comm_ranks"])]
                want = 4 * blocks // 2
                print(f"muon's gather at np=2: {extra} bytes per rank per step (FP32 block units: {want})")
                if extra != [want, want]:
                    failures.append(f"muon's extra all-gather bytes {extra}, expected {want} per rank")

        # Resume: exact in one process and at the same sharding; resharded, the same run.
        for np_, stage in ((1, 0), (2, 2)):
            name = f"resume_np{np_}_zero{stage}"
            _, _, straight = (None, None, base) if np_ == 1 else train(tmp, name + "_straight", np_, stage)
            train(tmp, name, np_, stage, extra=["--stop-at", "4"])
            _, _, rest = train(tmp, name, np_, stage, extra=["--resume", "latest"])
            got = [s["loss"] for s in rest[4:]]
            want = [s["loss"] for s in straight[4:]]
            print(f"{name}: {got} vs {want}")
            if got != want or len(got) != STEPS - 4:
                failures.append(f"{name}: resumed losses differ from the uninterrupted run")
            if np_ == 1 and final_params(os.path.join(tmp, name)).keys() == base_params.keys():
                diff = [k for k, v in final_params(os.path.join(tmp, name)).items() if not np.array_equal(v, base_params[k])]
                if diff:
                    failures.append(f"{name}: final parameters differ from the uninterrupted run: {diff[:3]}")
        train(tmp, "reshard", 2, 3, extra=["--stop-at", "4"])
        _, _, rest = train(tmp, "reshard", 1, 0, extra=["--resume", "latest"])
        e = max(abs(a["loss"] - b) / abs(b) for a, b in zip(rest[4:], base_loss[4:]))
        print(f"resume np2 zero3 -> one process: max loss rel {e:.1e}")
        if len(rest[4:]) != STEPS - 4 or e > FP32_TOL:
            failures.append(f"reshard resume: rel {e:.2e}, {len(rest[4:])} steps")
    return sixnd_files.report(failures, "Muon under ZeRO")


if __name__ == "__main__":
    sys.exit(main())
