"""A stop signal under mpirun: every rank stops after the same step, one checkpoint is written,
and the job says so once (rank 0's lines), not once per rank; `--resume latest` continues.

Three deliveries are checked: SIGTERM to every rank (what a batch scheduler's cancel does),
SIGTERM to rank 1 alone: the ranks agree on the stop and on the signal, so rank 0, which received
none, still names it; and SIGUSR1 to mpirun, which passes it on to every rank as it is (SIGINT or
SIGTERM sent to mpirun reach the ranks as SIGTERM and a kill a second later, before a step of any
size ends; sixnd did not stop on SIGUSR1, whose default ends the process)."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
import stand_in  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
MPIRUN = shutil.which("mpirun")
LAUNCH = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "2"]
TIMEOUT = 150


def train_cmd(tmp, out, log, steps, *extra):
    # Each rank records its pid (the shell's, which exec hands to sixnd) so that the test can
    # signal the ranks themselves rather than mpirun, which would kill them.
    wrapper = stand_in.write_script(os.path.join(tmp, "rank.sh"),
                                    '#!/bin/sh\necho $$ > "%s/pid.$OMPI_COMM_WORLD_RANK"\nexec "$@"\n' % tmp)
    return LAUNCH + [wrapper, SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256",
                     "--train-data", os.path.join(tmp, "train.bin"), "--device", "cpu", "--dtype", "fp32",
                     "--batch", "2", "--seq-len", "16", "--zero", "1", "--peak-tflops", "1", "--steps", str(steps),
                     "--checkpoint-every", "0", "--out", out, "--log", log] + list(extra)


def rank_pid(tmp, rank):
    with open(os.path.join(tmp, f"pid.{rank}")) as f:
        return int(f.read())


def signal_ranks(tmp, ranks, sig):
    def send(_):
        for rank in ranks:
            os.kill(rank_pid(tmp, rank), sig)
    return send


def interrupt(tmp, name, send, sig, rank0_signalled, failures):
    out, log = os.path.join(tmp, name), os.path.join(tmp, name + ".jsonl")
    for rank in (0, 1):
        if os.path.exists(os.path.join(tmp, f"pid.{rank}")):
            os.remove(os.path.join(tmp, f"pid.{rank}"))
    p = subprocess.Popen(train_cmd(tmp, out, log, 100000), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=sixnd_files.MPI_ENV)
    try:
        t0 = time.time()
        while len(sixnd_files.steps_logged(log)) < 3 and p.poll() is None and time.time() - t0 < TIMEOUT:
            time.sleep(0.05)
        if p.poll() is not None or len(sixnd_files.steps_logged(log)) < 3:
            failures.append(f"{name}: the run did not start: {p.communicate()[1][-400:]}")
            return
        send(p)
        _, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        failures.append(f"{name}: still running {TIMEOUT} s after the signal")
        return
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    done = sixnd_files.steps_logged(log)[-1]
    lines = [x for x in err.splitlines() if x.startswith("sixnd")]
    print(f"{name}: exit {p.returncode} after step {done}; {lines}")
    ck = os.path.join(out, "checkpoints", f"step-{done:08d}")
    if p.returncode in (0, None):
        failures.append(f"{name}: exit {p.returncode}")
    # Rank 0 announces the stop when it is signalled itself; the error comes from rank 0 alone.
    announced = ["stopping after this step" in x for x in lines]
    interrupted = [f"interrupted by {sig.name} after step {done}" in x for x in lines]
    if sum(interrupted) != 1 or sum(announced) != (1 if rank0_signalled else 0) or len(lines) != sum(announced) + 1:
        failures.append(f"{name}: expected {'an announcement and ' if rank0_signalled else ''}one line saying the job "
                        f"was interrupted by {sig.name} after step {done}, nothing more: {lines}")
    # A SIGTERM may have come from mpirun, which kills the ranks a second later: the announcement
    # names the signal to send mpirun instead.
    hint = ["signal mpirun with SIGUSR1" in x for x, a in zip(lines, announced) if a]
    if any(hint) != (rank0_signalled and sig != signal.SIGUSR1):
        failures.append(f"{name}: the announcement {'lacks' if not any(hint) else 'has'} the SIGUSR1 advice: {lines}")
    if not os.path.exists(os.path.join(ck, "DONE")):
        failures.append(f"{name}: no finished checkpoint {ck}")
        return
    rlog = os.path.join(tmp, name + "_resume.jsonl")
    r = subprocess.run(train_cmd(tmp, out, rlog, done + 2, "--resume", "latest"), capture_output=True, text=True,
                       env=sixnd_files.MPI_ENV, timeout=TIMEOUT)
    if r.returncode != 0 or sixnd_files.steps_logged(rlog) != [done + 1, done + 2]:
        failures.append(f"{name}: resume logged {sixnd_files.steps_logged(rlog)}, expected [{done + 1}, {done + 2}]: "
                        f"{r.stderr.strip()[-300:]}")


def main():
    if not MPIRUN:
        print("SKIP: mpirun (openmpi-bin) not found")
        return 77
    failures = []
    tmp = tempfile.mkdtemp(prefix="sixnd_signal_mpi_")
    try:
        sixnd_files.write_shard(os.path.join(tmp, "train.bin"), [(i * 31) % 256 for i in range(20000)])
        interrupt(tmp, "every_rank", signal_ranks(tmp, (0, 1), signal.SIGTERM), signal.SIGTERM, True, failures)
        interrupt(tmp, "rank_1_alone", signal_ranks(tmp, (1,), signal.SIGTERM), signal.SIGTERM, False, failures)
        interrupt(tmp, "mpirun_sigusr1", lambda p: p.send_signal(signal.SIGUSR1), signal.SIGUSR1, True, failures)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return sixnd_files.report(failures, "a stop signal under mpirun")


if __name__ == "__main__":
    sys.exit(main())
