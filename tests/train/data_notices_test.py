"""What `sixnd train` says of its data before training:
1. before a run reads every token of a large training set once (the vocabulary check and the
   content hash, a minute for 20 GB), rank 0 says so, where a run would otherwise sit silent and
   look hung; a small set says nothing. The large shard is a sparse file of 1.2 GB (token 0
   throughout), so the test writes almost nothing;
2. a validation shard that --train-data takes in too (a glob over data prepare's output) is
   warned of, naming it, however its path is spelt, and so is one that is a copy of a training
   shard (the same tokens; it used to pass unnoticed); separate sets are not."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402
from checklist import check, verdict  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
NOTICE = "reading every token once"
TOO = "is a --train-data shard or a copy of one"


def train(tmp, shard, *extra):
    return subprocess.run([SIXND, "train", "--init", "random", "--model", "tiny", "--train-data", shard, "--shuffle",
                           "off", "--steps", "1", "--batch", "1", "--seq-len", "16", "--device", "cpu", "--dtype", "fp32",
                           "--out", os.path.join(tmp, f"run{len(os.listdir(tmp))}"), "--peak-tflops", "1", *extra],
                          capture_output=True, text=True, env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"), timeout=300)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        big = os.path.join(tmp, "big.bin")
        ntok = 600_000_000
        with open(big, "wb") as f:
            header = [0] * 256
            header[:3] = [20240520, 1, ntok]
            f.write(struct.pack("256i", *header))
            f.truncate(1024 + 2 * ntok)
        r = train(tmp, big)
        said = [line for line in r.stderr.splitlines() if NOTICE in line]
        check(r.returncode == 0, f"a 1.2 GB shard trains: exit {r.returncode} {r.stderr.strip()[-300:]!r}")
        check(len(said) == 1 and big + ": 1 shard, 1.2 GB" in said[0],
              f"the reading of a 1.2 GB set is announced once, naming it and its size ({said})")
        small = os.path.join(tmp, "small.bin")
        sixnd_files.write_repeating_shard(small, 50)
        r = train(tmp, small)
        check(r.returncode == 0 and NOTICE not in r.stderr, f"a small set says nothing of it: exit {r.returncode}")
        os.remove(big)

        data = os.path.join(tmp, "data")
        os.makedirs(data)
        for name, repeats in (("train_000000.bin", 50), ("val_000000.bin", 20)):
            sixnd_files.write_repeating_shard(os.path.join(data, name), repeats)
        val = os.path.join(data, "val_000000.bin")
        r = train(tmp, os.path.join(data, "*.bin"), "--val-data", os.path.join(tmp, "data", ".", "val_000000.bin"),
                  "--eval-every", "1")
        warned = [line for line in r.stderr.splitlines() if TOO in line]
        check(r.returncode == 0 and len(warned) == 1 and "val_000000.bin" in warned[0],
              f"a validation shard the training glob takes in is warned of: exit {r.returncode}, {warned}")
        r = train(tmp, os.path.join(data, "train_*.bin"), "--val-data", val, "--eval-every", "1")
        check(r.returncode == 0 and TOO not in r.stderr,
              f"separate training and validation shards: no warning (exit {r.returncode})")
        shutil.copyfile(os.path.join(data, "train_000000.bin"), os.path.join(data, "val_000001.bin"))
        r = train(tmp, os.path.join(data, "train_*.bin"), "--val-data", os.path.join(data, "val_*.bin"), "--eval-every", "1")
        warned = [line for line in r.stderr.splitlines() if TOO in line]
        check(r.returncode == 0 and len(warned) == 1 and "val_000001.bin" in warned[0],
              f"a validation shard that is a copy of a training shard is warned of: exit {r.returncode}, {warned}")
    return verdict()


if __name__ == "__main__":
    sys.exit(main())
