"""A checkpoint the user may not look into — a directory on its path without search permission, or
the checkpoint directory itself without it — is refused by every verb that reads checkpoints with
one error naming the path and the fault, the way any other unreadable file is (and so is a Hugging
Face directory behind one, for --init hf:), and so is an export
--out that cannot be listed (it is checked for files no export writes): std::filesystem's own
exception reached the user as "filesystem error: status: Permission denied [...]". Nothing is
written: not the export, not the run directory. Run as a user the permission bits bind: `nobody`
when the test runs as root."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")


def main():
    failures = []
    tmp = tempfile.mkdtemp(prefix="sixnd_ckunreach_")
    try:
        os.chmod(tmp, 0o777)
        data = os.path.join(tmp, "train.bin")
        sixnd_files.write_shard(data, np.random.default_rng(0).integers(0, 256, 4000))
        os.chmod(data, 0o644)
        train = [SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--max-seq-len", "32",
                 "--device", "cpu", "--dtype", "fp32", "--train-data", data, "--batch", "2", "--seq-len", "16",
                 "--peak-tflops", "1", "--steps", "2"]
        r = subprocess.run(train + ["--stop-at", "1", "--out", os.path.join(tmp, "run")], capture_output=True, text=True, env=ENV)
        if r.returncode != 0:
            raise RuntimeError(f"the run that makes the checkpoint failed: {r.stderr.strip()[-300:]}")
        closed, shut = os.path.join(tmp, "closed"), os.path.join(tmp, "shut")
        os.makedirs(closed)
        shutil.copytree(os.path.join(tmp, "run", "checkpoints", "step-00000001"), os.path.join(closed, "step-00000001"))
        shutil.copytree(os.path.join(tmp, "run", "checkpoints", "step-00000001"), shut)
        behind_closed = os.path.join(closed, "step-00000001")
        r = subprocess.run([SIXND, "export", "--checkpoint", os.path.join(tmp, "run", "checkpoints", "step-00000001"),
                            "--out", os.path.join(closed, "hf")], capture_output=True, text=True, env=ENV)
        if r.returncode != 0:
            raise RuntimeError(f"the export that makes the Hugging Face directory failed: {r.stderr.strip()[-300:]}")
        hf_closed = os.path.join(closed, "hf")
        export_out, run_out = os.path.join(tmp, "export"), os.path.join(tmp, "resumed")
        unlisted = os.path.join(tmp, "unlisted")
        os.makedirs(unlisted)
        if os.geteuid() == 0:
            os.chown(unlisted, sixnd_files.NOBODY, sixnd_files.NOBODY)
        cases = [
            ("eval, a directory on the way closed", behind_closed,
             ["eval", "--checkpoint", behind_closed, "--data", data, "--batch", "2", "--seq-len", "16"]),
            ("export, a directory on the way closed", behind_closed,
             ["export", "--checkpoint", behind_closed, "--out", export_out]),
            ("train --resume, a directory on the way closed", behind_closed,
             train[1:] + ["--out", run_out, "--resume", behind_closed]),
            ("eval --init hf:, a directory on the way closed", hf_closed,
             ["eval", "--init", "hf:" + hf_closed, "--data", data, "--batch", "2", "--seq-len", "16"]),
            ("sample, the checkpoint directory closed", shut, ["sample", "--checkpoint", shut, "--prompt-ids", "1,2"]),
            ("export, the checkpoint directory closed", shut, ["export", "--checkpoint", shut, "--out", export_out]),
            ("export, an --out that cannot be listed", unlisted,
             ["export", "--checkpoint", os.path.join(tmp, "run", "checkpoints", "step-00000001"), "--out", unlisted]),
        ]
        # Listable but not searchable: the names are there, nothing under them can be looked at.
        os.chmod(closed, 0o600)
        os.chmod(shut, 0o600)
        os.chmod(unlisted, 0o300)
        try:
            for name, where, args in cases:
                r = subprocess.run([SIXND] + args, capture_output=True, text=True, env=ENV, stdin=subprocess.DEVNULL,
                                   preexec_fn=sixnd_files.as_user(), timeout=120)
                errors = [x for x in r.stderr.splitlines() if "error" in x.lower()]
                print(f"{name}: exit {r.returncode}, {errors}")
                if r.returncode != 1 or len(errors) != 1 or where not in errors[0] or "Permission denied" not in errors[0] \
                        or "filesystem error" in errors[0]:
                    failures.append(f"{name}: exit {r.returncode}, expected 1 and one error naming {where} and the fault: "
                                    f"{r.stderr.strip()[-400:]}")
                for out in (export_out, run_out):
                    if os.path.lexists(out):
                        failures.append(f"{name}: {out} was written")
                        shutil.rmtree(out, ignore_errors=True)
        finally:
            os.chmod(closed, 0o755)
            os.chmod(shut, 0o755)
            os.chmod(unlisted, 0o755)
        if os.listdir(unlisted):
            failures.append(f"{unlisted} was written: {os.listdir(unlisted)}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return sixnd_files.report(failures, "an unreachable checkpoint is one error naming it")


if __name__ == "__main__":
    sys.exit(main())
