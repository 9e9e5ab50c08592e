"""ZeRO 0-3 at a world size that is not a power of two (mpirun -np 3) reproduce one process with
the same global batch: losses, global gradient norms and final parameters to 1e-5 (FP32), with
three micro-steps per step and clipping active on every step (so a norm taken over a rank's
shard alone would change the updates). The other mpirun tests use 2 and 4 ranks only, where MPI
pairs ranks evenly and every unit pads to a power of two; at 3, MPI folds the odd rank in and
units pad to a multiple of 192.

Every rank's bytes sent per collective are counted by hand from the header's layout (Ψ padded
elements, n ranks, a micro-steps, 4 bytes): stage 0 all-reduces 2(n-1)/n Ψ once; stage 1
reduce-scatters and all-gathers (n-1)/n Ψ once each; stage 2 reduce-scatters on every micro-step;
stage 3 too, and gathers the units its two slots do not still hold (stage3_gathered). A bound of
"every unit at least once" let a slot policy that re-gathers units its slots held pass unseen."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
from sixnd_files import rel  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
TOL = 1e-5
NP, GLOBAL_B, T, ACCUM, STEPS, CLIP = 3, 6, 16, 3, 5, 1.0


def train(tmp, name, np_, stage):
    out, log = os.path.join(tmp, name), os.path.join(tmp, name + ".jsonl")
    cmd = [SIXND, "train", "--init", "random", "--model", "tiny", "--seed", "5", "--train-data",
           os.path.join(tmp, "train.bin"), "--device", "cpu", "--dtype", "fp32", "--batch", str(GLOBAL_B // np_),
           "--seq-len", str(T), "--steps", str(STEPS), "--lr", "3e-3", "--warmup", "2", "--weight-decay", "0.1",
           "--grad-clip", str(CLIP), "--zero", str(stage), "--total-batch-tokens", str(ACCUM * GLOBAL_B * T),
           "--out", out, "--log", log, "--peak-tflops", "1", "--keep-last", "0"]
    recs = sixnd_files.run_train(cmd, name, log, np_, mpi=np_ > 1)
    params = sixnd_files.determined(sixnd_files.checkpoint_params(sixnd_files.last_checkpoint(out)))
    return recs[0], [r for r in recs if r.get("type") == "step"], params


def stage3_gathered(units):
    """Elements a ZeRO-3 step all-gathers, from the header's unit sizes [embeddings, blocks...,
    ln_f], as dist/zero.h describes it: the embeddings unit once (it keeps a slot for the step);
    the first forward every other unit; each later pass (backward L+1..1, forward 1..L+1) all but
    the two units the pass before left in the two slots (L and L+1 after a forward, 1 and 2
    after a backward). Two blocks or more (tiny has two)."""
    emb, blocks, lnf = units[0], units[1:-1], units[-1]
    forward = sum(blocks) + lnf
    backward = sum(blocks[:-1])            # L+1 and L are still in the slots
    later_forward = sum(blocks[2:]) + lnf  # 1 and 2 are still in the slots
    return emb + forward + backward + (ACCUM - 1) * (later_forward + backward)


def hand_count(stage, layout):
    """{collective: bytes} one rank sends per step."""
    def share(elems):
        return (NP - 1) * elems * 4 // NP

    once = share(layout["total"])
    return {0: {"all_reduce": 2 * once, "reduce_scatter": 0, "all_gather": 0},
            1: {"all_reduce": 0, "reduce_scatter": once, "all_gather": once},
            2: {"all_reduce": 0, "reduce_scatter": ACCUM * once, "all_gather": once},
            3: {"all_reduce": 0, "reduce_scatter": ACCUM * once, "all_gather": share(stage3_gathered(layout["units"]))}}[stage]


def main():
    if sixnd_files.mpirun_missing():
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        sixnd_files.write_repeating_shard(os.path.join(tmp, "train.bin"))
        _, base, base_params = train(tmp, "base", 1, 0)
        unclipped = [s["step"] for s in base if s["grad_norm"] <= CLIP]
        if unclipped:
            failures.append(f"the one-process run did not clip at steps {unclipped}: the test needs norms above {CLIP}")
        for stage in (0, 1, 2, 3):
            name = f"np{NP}_zero{stage}"
            header, steps, params = train(tmp, name, NP, stage)
            if len(steps) != STEPS:
                failures.append(f"{name}: {len(steps)} steps logged, expected {STEPS}")
                continue
            e_loss = max(abs(a["loss"] - b["loss"]) / b["loss"] for a, b in zip(steps, base))
            e_norm = max(abs(a["grad_norm"] - b["grad_norm"]) / b["grad_norm"] for a, b in zip(steps, base))
            e_param, worst = max((rel(params[k], base_params[k]), k) for k in base_params)
            print(f"{name}: max rel loss {e_loss:.1e}, grad norm {e_norm:.1e}, parameters {e_param:.1e} ({worst})")
            if e_loss > TOL or e_norm > TOL or e_param > TOL:
                failures.append(f"{name}: loss {e_loss:.2e}, grad norm {e_norm:.2e}, parameters {e_param:.2e} ({worst}) "
                                f"against one process (bound {TOL})")
            want = hand_count(stage, header["layout"])
            ranks = steps[-1]["comm_ranks"]
            if len(ranks) != NP:
                failures.append(f"{name}: comm_ranks holds {len(ranks)} ranks, expected {NP}")
            for r, sent in enumerate(ranks):
                got = {c: int(sent[c]) for c in want}
                if got != want:
                    failures.append(f"{name} rank {r}: bytes sent {got}, by hand {want}")
    return sixnd_files.report(failures, f"ZeRO 0-3 at -np {NP} against one process")


if __name__ == "__main__":
    sys.exit(main())
