"""A run log whose header is long — it lists every shard, and a thousand shards pass 100 KiB —
is still a run log: `--resume latest` appends to it (it used to be refused as "not a sixnd run
log" once the header outgrew the 64 KiB read to find its end), and a new run may replace it."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMP_NUM_THREADS="1")
SHARDS = 700


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        shards = os.path.join(tmp, "a_data_set_directory_named_the_long_way_real_data_sets_are_named")
        os.makedirs(shards)
        for i in range(SHARDS):
            sixnd_files.write_shard(os.path.join(shards, f"fineweb_edu_train_{i:06d}.bin"), [(i + 7 * k) % 101 for k in range(200)])
        out, log = os.path.join(tmp, "run"), os.path.join(tmp, "run.jsonl")

        def train(*extra):
            cmd = [SIXND, "train", "--init", "random", "--model", "tiny", "--device", "cpu", "--dtype", "fp32",
                   "--train-data", os.path.join(shards, "*.bin"), "--batch", "2", "--seq-len", "16", "--steps", "4",
                   "--checkpoint-every", "2", "--peak-tflops", "1", "--out", out, "--log", log, *extra]
            return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=600)

        r = train("--stop-at", "2")
        if r.returncode != 0:
            return sixnd_files.report([f"first run failed: {r.stderr.strip()[-300:]}"], "a run log with a long header")
        header_bytes = len(open(log, "rb").readline())
        print(f"header of {SHARDS} shards: {header_bytes} bytes")
        if header_bytes <= 1 << 16:
            failures.append(f"the header is {header_bytes} bytes: not past 64 KiB, so this test proves nothing")

        r = train("--resume", "latest")
        records = [json.loads(x) for x in open(log)]
        steps = [x["step"] for x in records if x.get("type") == "step"]
        headers = sum(x.get("type") == "header" for x in records)
        print(f"resume: exit {r.returncode}, steps {steps}, {headers} headers")
        if r.returncode != 0 or steps != [1, 2, 3, 4] or headers != 2:
            failures.append(f"resume: exit {r.returncode}, steps {steps}, {headers} headers; {r.stderr.strip()[-300:]}")

        r = train("--overwrite")
        steps = [x["step"] for x in map(json.loads, open(log)) if x.get("type") == "step"]
        print(f"a new run over the log: exit {r.returncode}, steps {steps}")
        if r.returncode != 0 or steps != [1, 2, 3, 4]:
            failures.append(f"a new run over the log: exit {r.returncode}, steps {steps}; {r.stderr.strip()[-300:]}")
    return sixnd_files.report(failures, "a run log with a long header")


if __name__ == "__main__":
    sys.exit(main())
