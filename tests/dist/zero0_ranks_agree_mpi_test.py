"""At ZeRO 0 every rank updates every parameter itself, from the all-reduced gradient: the ranks
stay one model only if the all-reduce hands every rank the same bits and each rank's update
(global norm, clipping, AdamW or Muon) is the same function of them. Nothing re-synchronises
them, and the checkpoint keeps rank 0's parameters, so ranks that drift apart by roundings train
on as different models while the averaged loss stays within any parity test's tolerance.

Each rank writes its whole optimizer state (FP32 master weights, m, v) at ZeRO 0; after BF16
steps at -np 3 (MPI folds the odd rank into its pairing), with three micro-steps and clipping
active, the three files must hold the same bytes, for AdamW and for Muon."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
NP, B, T, ACCUM, STEPS = 3, 2, 16, 3, 4


def train(tmp, optimizer):
    out, log = os.path.join(tmp, optimizer), os.path.join(tmp, optimizer + ".jsonl")
    cmd = [SIXND, "train", "--init", "random", "--model", "tiny", "--seed", "5", "--train-data",
           os.path.join(tmp, "train.bin"), "--device", "cpu", "--dtype", "bf16", "--batch", str(B),
           "--seq-len", str(T), "--steps", str(STEPS), "--lr", "3e-3", "--weight-decay", "0.1",
           "--grad-clip", "0.5", "--zero", "0", "--total-batch-tokens", str(ACCUM * NP * B * T),
           "--optimizer", optimizer, "--out", out, "--log", log, "--peak-tflops", "1", "--keep-last", "0"]
    steps = [r for r in sixnd_files.run_train(cmd, optimizer, log, NP) if r.get("type") == "step"]
    return sixnd_files.last_checkpoint(out), steps


def main():
    if sixnd_files.mpirun_missing():
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sixnd_files.write_repeating_shard(os.path.join(tmp, "train.bin"))
        for optimizer in ("adamw", "muon"):
            ck, steps = train(tmp, optimizer)
            unclipped = [s["step"] for s in steps if s["grad_norm"] <= 0.5]
            if unclipped:
                failures.append(f"{optimizer}: no clipping at steps {unclipped}: the test needs every step clipped")
            states = [open(os.path.join(ck, f"optim-rank{r}.bin"), "rb").read() for r in range(NP)]
            for r in range(1, NP):
                if states[r] != states[0]:
                    at = next(i for i, (a, b) in enumerate(zip(states[r], states[0])) if a != b) \
                        if len(states[r]) == len(states[0]) else "the length"
                    failures.append(f"{optimizer}: rank {r}'s optimizer state differs from rank 0's (first at byte {at}): "
                                    "the ranks no longer train one model")
            print(f"{optimizer}: {NP} ranks' optimizer states of {len(states[0])} bytes compared")
    return sixnd_files.report(failures, f"ZeRO 0 ranks at -np {NP} hold one model")


if __name__ == "__main__":
    sys.exit(main())
