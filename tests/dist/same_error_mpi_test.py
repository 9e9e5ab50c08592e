"""An error every rank meets alike (a bad flag, a missing data file) is said once under mpirun.

Every rank parses the same flags and opens the same files, so every rank used to print the same
error line (three under -np 3). Before the ranks connect, rank 0 prints it and the others wait
for mpirun to stop them; after, a failing rank asks at the end of its run whether rank 0 failed
the same way. A fault only one rank meets (mpirun's MPMD form gives rank 1 alone a bad flag)
must still be said, by that rank. Each job must end non-zero well inside the timeout."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
TIMEOUT_S = 60


def run(name, cmd, says, failures):
    ended = sixnd_files.mpi_job_errors(cmd, TIMEOUT_S)
    if ended is None:
        failures.append(f"{name}: still running after {TIMEOUT_S} s")
        return
    rc, errors = ended
    print(f"{name}: exit {rc}, error lines {errors}")
    if rc == 0 or len(errors) != 1 or says not in errors[0]:
        failures.append(f"{name}: exit {rc}, error lines {errors}; wanted one saying '{says}'")


def main():
    if sixnd_files.mpirun_missing():
        return 77
    failures = []
    launch = [sixnd_files.MPIRUN, "--allow-run-as-root", "--oversubscribe"]
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "train.bin")
        sixnd_files.write_repeating_shard(data)
        args = [SIXND, "train", "--init", "random", "--model", "tiny", "--train-data", data, "--device", "cpu",
                "--dtype", "fp32", "--batch", "2", "--seq-len", "16", "--steps", "2", "--peak-tflops", "1",
                "--out", os.path.join(tmp, "out")]
        run("bad_flag_on_every_rank", launch + ["-np", "3"] + args + ["--no-such-flag"], "--no-such-flag", failures)
        run("missing_data_on_every_rank", launch + ["-np", "3"] + [a if a != data else data + ".absent" for a in args],
            "train.bin.absent", failures)
        run("bad_flag_on_rank_1_alone", launch + ["-np", "1"] + args + [":", "-np", "1"] + args + ["--seq-len", "0"],
            "--seq-len", failures)
    return sixnd_files.report(failures, "an error every rank meets alike is said once")


if __name__ == "__main__":
    sys.exit(main())
