"""`sixnd plan --check` on the log of a run whose resume stopped before its first step (killed
while loading, or refused): the log ends on the resume's header with no step after it. The
check used to take that last header as the segment to check and refuse the whole log ("no step
records after this header"), though `report` and `ablate` read it; it now checks the last
segment that logged steps, giving what the log without the extra header gives, even when the
stopped resume's header says another world size. A log of a header alone is still refused,
naming FILE:1."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
from checklist import check, verdict  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, OMP_NUM_THREADS="1", ASAN_OPTIONS="detect_leaks=0")


def plan_check(log):
    return subprocess.run([SIXND, "plan", "--check", log, "--json"], capture_output=True, text=True, env=ENV, timeout=120)


def main():
    with tempfile.TemporaryDirectory(prefix="sixnd_plan_resume_header_") as tmp:
        data = os.path.join(tmp, "train.bin")
        sixnd_files.write_shard(data, [(i * 7) % 64 for i in range(4000)])
        log = os.path.join(tmp, "run.jsonl")
        r = subprocess.run([SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "64", "--max-seq-len",
                            "16", "--device", "cpu", "--dtype", "fp32", "--train-data", data, "--batch", "2", "--seq-len",
                            "8", "--steps", "2", "--peak-tflops", "1", "--out", os.path.join(tmp, "run"), "--log", log],
                           capture_output=True, text=True, env=ENV, timeout=300)
        if r.returncode != 0:
            print(f"FAILED: setup run: {r.stderr[-2000:]}")
            return 1
        records = [json.loads(x) for x in open(log)]
        whole = plan_check(log)
        check(whole.returncode == 0, f"the run's own log checks: exit {whole.returncode} {whole.stderr.strip()}")

        header = next(x for x in records if x.get("type") == "header")
        stopped = os.path.join(tmp, "stopped.jsonl")
        with open(stopped, "w") as f:
            f.writelines(json.dumps(x) + "\n" for x in records + [dict(header, world_size=2)])
        r = plan_check(stopped)
        check(r.returncode == 0 and r.stdout == whole.stdout,
              f"a log ending on a resume's header checks its last segment with steps: exit {r.returncode} "
              f"{r.stderr.strip()!r}, same JSON: {r.stdout == whole.stdout}")

        alone = os.path.join(tmp, "alone.jsonl")
        with open(alone, "w") as f:
            f.write(json.dumps(header) + "\n")
        r = plan_check(alone)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 1 and len(lines) == 1 and f"{alone}:1" in lines[0] and "no step records" in lines[0],
              f"a header alone is refused naming FILE:1: exit {r.returncode} {lines}")
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
