"""Bad input to `sixnd eval`: each case ends with one clear message on stderr naming the file or
flag and the fault, and a non-zero exit."""
import os
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import sixnd_files  # noqa: E402

SIXND = os.environ["SIXND_BIN"]
L, NH, C, V, MAXT = 1, 2, 16, 50, 16
VP = (V + 127) // 128 * 128
NPARAMS = VP * C + MAXT * C + L * (12 * C * C + 13 * C) + 2 * C


def model_file(path, magic=20240326, version=3, drop=0):
    h = [0] * 256
    h[:8] = [magic, version, MAXT, V, L, NH, C, VP]
    with open(path, "wb") as f:
        f.write(struct.pack("256i", *h))
        f.write(b"\0" * (NPARAMS * 4 - drop))


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        good_model, good_data = os.path.join(d, "good.bin"), os.path.join(d, "data.bin")
        model_file(good_model)
        sixnd_files.write_shard(good_data, [i % V for i in range(200)])
        base = ["eval", "--device", "cpu", "--dtype", "fp32", "--batch", "2", "--seq-len", "8"]

        def case(name, args, expect):
            r = subprocess.run([SIXND] + args, capture_output=True, text=True)
            lines = [x for x in r.stderr.splitlines() if x.strip()]
            ok = r.returncode != 0 and len(lines) >= 1 and all(e in r.stderr for e in expect)
            print(f"{'ok  ' if ok else 'FAIL'} {name}: exit {r.returncode}: {r.stderr.strip()[:300]}")
            if not ok:
                failures.append(name)

        r = subprocess.run([SIXND] + base + ["--init", "llmc:" + good_model, "--data", good_data], capture_output=True, text=True)
        if r.returncode != 0 or '"loss"' not in r.stdout.splitlines()[-1]:
            failures.append("good model: " + r.stderr)

        short = os.path.join(d, "short.bin")
        model_file(short, drop=100)
        case("truncated model file", base + ["--init", "llmc:" + short, "--data", good_data], [short, "truncated"])
        magic = os.path.join(d, "magic.bin")
        model_file(magic, magic=1234)
        case("wrong magic", base + ["--init", "llmc:" + magic, "--data", good_data], [magic, "bad magic"])
        version = os.path.join(d, "version.bin")
        model_file(version, version=4)
        case("unknown version", base + ["--init", "llmc:" + version, "--data", good_data], [version, "version 4"])
        big = os.path.join(d, "big.bin")
        sixnd_files.write_shard(big, [1, 2, 3, V + 7] + [0] * 100)
        case("token >= vocab", base + ["--init", "llmc:" + good_model, "--data", big], [big, "token 57", "position 3"])
        badshard = os.path.join(d, "badshard.bin")
        sixnd_files.write_shard(badshard, [1, 2, 3], magic=999)
        case("bad shard magic", base + ["--init", "llmc:" + good_model, "--data", badshard], [badshard, "bad magic"])
        small = os.path.join(d, "small.bin")
        sixnd_files.write_shard(small, [1] * 10)
        case("batch does not fit", base + ["--init", "llmc:" + good_model, "--data", small], [small, "needs 17"])
        case("too many batches", base + ["--init", "llmc:" + good_model, "--data", good_data, "--batches", "99"],
             ["--batches", "at most 12 fit"])
        case("unknown flag", base + ["--init", "llmc:" + good_model, "--data", good_data, "--bogus", "1"], ["--bogus"])
        case("no data", base + ["--init", "llmc:" + good_model, "--data", os.path.join(d, "none*.bin")], ["no files match"])
        case("bad dtype", ["eval", "--dtype", "fp8", "--data", good_data], ["--dtype", "fp8"])
        case("bad init", ["eval", "--init", "onnx:gpt2", "--data", good_data, "--device", "cpu"], ["--init", "hf:DIR"])
        case("seq-len over max", base[:-1] + ["64", "--init", "llmc:" + good_model, "--data", good_data],
             ["--seq-len", "exceeds"])
        case("unknown verb", ["frobnicate"], ["unknown verb 'frobnicate'"])
        case("batch 0", ["eval", "--device", "cpu", "--batch", "0", "--seq-len", "8", "--init", "llmc:" + good_model,
                         "--data", good_data], ["--batch: must be positive, got 0"])
        per_item = os.path.join(d, "items.jsonl")
        case("per-item without a task", base + ["--init", "llmc:" + good_model, "--data", good_data, "--per-item", per_item],
             ["--per-item", "--task hellaswag"])
        if os.path.exists(per_item):
            failures.append("per-item without a task: wrote " + per_item)
    return sixnd_files.report(failures, "sixnd eval bad input")


if __name__ == "__main__":
    sys.exit(main())
