"""Loss-spike actions under mpirun on the CPU: with ZeRO 3 on 2 ranks (and ZeRO 1 and 2 for the
rollback to a snapshot), a run whose injected LR
spike is rolled back (to an in-memory snapshot of the sharded state, or to a checkpoint on
disk), or whose junk batch is skipped or only reported (warn: the determinism re-check's extra
forward through the gathered units, then the update), gives the same FP32 losses as one process (relative 1e-5), step for step
including the steps rerun after the rollback, every rank takes the same decisions (the log's
spike, skip and rollback events match the one-process run's), the report lists both ranks' rows,
and the 2-rank rollback run stopped after its rollback and resumed repeats its losses bit for bit."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
FP32_TOL = 1e-5
GLOBAL_B, T, STEPS = 4, 16, 30


def train(tmp, name, np_, stage, extra):
    out = os.path.join(tmp, name)
    log = out + ".jsonl"
    cmd = [SIXND, "train", "--init", "random", "--model", "tiny", "--seed", "5", "--train-data",
           os.path.join(tmp, "train.bin"), "--device", "cpu", "--dtype", "fp32", "--batch", str(GLOBAL_B // np_),
           "--seq-len", str(T), "--steps", str(STEPS), "--lr", "3e-3", "--warmup", "2", "--schedule", "constant",
           "--grad-clip", "1.0", "--zero", str(stage), "--out", out, "--log", log, "--peak-tflops", "1",
           "--keep-last", "0", "--spike-window", "8"] + list(extra)
    recs = sixnd_files.run_train(cmd, name, log, np_)
    losses = [x["loss"] for x in recs if x.get("type") == "step"]
    events = [(x["event"], x["step"], x.get("to")) for x in recs
              if x.get("type") == "event" and x["event"] in ("spike", "skip", "rollback")]
    return losses, events


def report_rows(tmp, name, step):
    rep = json.load(open(os.path.join(tmp, name, "spikes", f"step-{step:07d}.json")))
    return [(r["rank"], r["row"]) for r in rep["batch"]["rows"]], rep["run"]["world"]


def main():
    if sixnd_files.mpirun_missing():
        return 77
    failures = []
    cases = {
        "rollback_memory": ["--inject-lr-spike", "18:300", "--on-spike", "rollback", "--snapshot-every", "3", "--rollback-steps", "4",
                            "--rollback-skip-batches", "2"],
        "rollback_disk": ["--inject-lr-spike", "18:300", "--on-spike", "rollback", "--checkpoint-every", "5", "--rollback-steps", "4",
                          "--rollback-skip-batches", "2"],
        "skip": ["--inject-junk-batch", "18", "--on-spike", "skip"],
        "warn": ["--inject-junk-batch", "18"],
    }
    with tempfile.TemporaryDirectory() as tmp:
        sixnd_files.write_repeating_shard(os.path.join(tmp, "train.bin"))
        for name, extra in cases.items():
            one, one_ev = train(tmp, name + "_np1", 1, 0, extra)
            if name == "rollback_memory":
                # The other stages restore their shards (stage 1-2: slices of full parameters) too.
                for stage in (1, 2):
                    other, other_ev = train(tmp, f"{name}_np2_zero{stage}", 2, stage, extra)
                    if other_ev != one_ev or len(other) != len(one) or \
                            max(abs(a - b) / abs(b) for a, b in zip(other, one)) > FP32_TOL:
                        failures.append(f"{name}: ZeRO {stage} on 2 ranks differs: {other_ev}")
            two, two_ev = train(tmp, name + "_np2_zero3", 2, 3, extra)
            if not any(e[0] in ("rollback", "skip") for e in one_ev) and name != "warn" or not one_ev:
                failures.append(f"{name}: the planted spike was not acted on: {one_ev}")
            if one_ev != two_ev:
                failures.append(f"{name}: events differ: one process {one_ev}, 2 ranks {two_ev}")
            if len(one) != len(two):
                failures.append(f"{name}: {len(one)} steps against {len(two)}")
                continue
            err = max(abs(a - b) / abs(b) for a, b in zip(two, one))
            print(f"{name}: {len(one)} step records, events {one_ev}, max loss rel {err:.1e}")
            if err > FP32_TOL:
                failures.append(f"{name}: losses differ by {err:.2e} relative")
            spike_step = one_ev[0][1]
            rows, world = report_rows(tmp, name + "_np2_zero3", spike_step)
            if world != 2 or rows != [(0, 0), (0, 1), (1, 0), (1, 1)]:
                failures.append(f"{name}: the 2-rank report has world {world}, rows {rows}")
            if name == "rollback_memory":
                # Stopped after the rollback and resumed: the uninterrupted run's losses, bit for bit.
                train(tmp, "resume_np2_zero3", 2, 3, extra + ["--stop-at", "24"])
                joined, _ = train(tmp, "resume_np2_zero3", 2, 3, extra + ["--resume", "latest"])  # the log goes on
                if joined != two:
                    failures.append(f"{name}: stop at 24 + resume gives other losses than the uninterrupted 2-rank run")
    return sixnd_files.report(failures, "spike skip/rollback under mpirun -np 2, ZeRO 3, equal to one process")


if __name__ == "__main__":
    sys.exit(main())
