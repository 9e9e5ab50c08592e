"""A run that stops itself under mpirun -np 3 (ZeRO 0 and 3) says why once, not once per rank.
The stops every rank reaches at the same step from the same reduced numbers: an update that makes
parameters non-finite, --max-bad-steps spikes skipped in a row, and a spike after --max-rollbacks
rollbacks. Each must end non-zero, well inside the timeout, with exactly one error line (rank
0's) and the log's stop event naming the reason. Before, every rank printed the same error."""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
RANKS, GLOBAL_B, T, STEPS = 3, 6, 16, 20
TIMEOUT_S = 120
SPIKES = ["--spike-window", "8", "--spike-z-loss", "3", "--schedule", "constant"]
CASES = {
    "non_finite_parameters": (["--lr", "1e38", "--grad-clip", "0"], "the update made parameters non-finite"),
    "max_bad_steps": (SPIKES + ["--inject-junk-batch", "15", "--on-spike", "skip", "--max-bad-steps", "1"],
                      "consecutive steps with a non-finite loss or gradient, or skipped as spikes"),
    "max_rollbacks": (SPIKES + ["--inject-lr-spike", "12:300", "--on-spike", "rollback", "--snapshot-every", "3",
                                "--rollback-steps", "2", "--rollback-skip-batches", "0", "--max-rollbacks", "1",
                                "--inject-junk-batch", "16"], "rollbacks (--max-rollbacks 1); stopped"),
}


def main():
    if sixnd_files.mpirun_missing():
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "train.bin")
        sixnd_files.write_repeating_shard(data)
        for reason, (extra, says) in CASES.items():
            for stage in (0, 3):
                name = f"{reason}_zero{stage}"
                out, log = os.path.join(tmp, name), os.path.join(tmp, name + ".jsonl")
                cmd = [sixnd_files.MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(RANKS), SIXND, "train",
                       "--init", "random", "--model", "tiny", "--seed", "5", "--train-data", data, "--device", "cpu",
                       "--dtype", "fp32", "--batch", str(GLOBAL_B // RANKS), "--seq-len", str(T), "--steps", str(STEPS),
                       "--zero", str(stage), "--out", out, "--log", log, "--peak-tflops", "1"] + extra
                ended = sixnd_files.mpi_job_errors(cmd, TIMEOUT_S)
                if ended is None:
                    failures.append(f"{name}: still running after {TIMEOUT_S} s")
                    continue
                rc, errors = ended
                stops = [x["reason"] for x in map(json.loads, open(log))
                         if x.get("type") == "event" and x.get("event") == "stop"] if os.path.exists(log) else []
                print(f"{name}: exit {rc}, {len(errors)} error line(s), stop events {stops}")
                if rc == 0 or len(errors) != 1 or says not in errors[0] or stops != [reason]:
                    failures.append(f"{name}: exit {rc}, stop events {stops}, error lines {errors}")
    return sixnd_files.report(failures, "a run's own stop under mpirun is said once")


if __name__ == "__main__":
    sys.exit(main())
