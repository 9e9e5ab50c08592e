"""Bad input to `sixnd eval`: each case ends with one clear message on stderr naming the file or
flag and the fault, and a non-zero exit."""
import json
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


def model_file(path, magic=20240326, version=3, drop=0, vocab=V):
    vp = (vocab + 127) // 128 * 128
    h = [0] * 256
    h[:8] = [magic, version, MAXT, vocab, L, NH, C, vp]
    with open(path, "wb") as f:
        f.write(struct.pack("256i", *h))
        f.write(b"\0" * ((NPARAMS + (vp - VP) * C) * 4 - drop))


def main():
    failures = []
    with tempfile.TemporaryDirectory() as d:
        good_model, good_data = os.path.join(d, "good.bin"), os.path.join(d, "data.bin")
        model_file(good_model)
        sixnd_files.write_shard(good_data, [i % V for i in range(200)])
        base = ["eval", "--device", "cpu", "--dtype", "fp32", "--batch", "2", "--seq-len", "8"]

        def case(name, args, expect):
            try:
                r = subprocess.run([SIXND] + args, capture_output=True, text=True, timeout=60)
            except subprocess.TimeoutExpired:
                print(f"FAIL {name}: timed out after 60 s")
                failures.append(name)
                return
            lines = [x for x in r.stderr.splitlines() if x.strip()]
            ok = r.returncode != 0 and len(lines) >= 1 and all(e in r.stderr for e in expect)
            print(f"{'ok  ' if ok else 'FAIL'} {name}: exit {r.returncode}: {r.stderr.strip()[:300]}")
            if not ok:
                failures.append(name)

        r = subprocess.run([SIXND] + base + ["--init", "llmc:" + good_model, "--data", good_data], capture_output=True, text=True)
        if r.returncode != 0 or '"loss"' not in r.stdout.splitlines()[-1]:
            failures.append("good model: " + r.stderr)
        # Without --seq-len, the default (64) is cut to the model's context of 16: 6 batches of
        # 2 x 16 from 200 tokens, not an error over a flag never given.
        r = subprocess.run([SIXND, "eval", "--device", "cpu", "--dtype", "fp32", "--batch", "2", "--init", "llmc:" + good_model,
                            "--data", good_data], capture_output=True, text=True)
        if r.returncode != 0 or json.loads(r.stdout.splitlines()[-1]).get("tokens") != 6 * 2 * MAXT:
            failures.append(f"default --seq-len on a context of {MAXT}: exit {r.returncode}: {r.stdout} {r.stderr}")

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
        case("llm.c model file is a directory", base + ["--init", "llmc:" + d, "--data", good_data], [d, "is a directory"])
        fifo = os.path.join(d, "model.fifo")
        os.mkfifo(fifo)
        case("llm.c model file is a FIFO (no hang)", base + ["--init", "llmc:" + fifo, "--data", good_data],
             [fifo, "not a regular file"])
        case("--seed with a model file", base + ["--init", "llmc:" + good_model, "--data", good_data, "--seed", "7"],
             ["--seed", "applies to --init random only", good_model])
        case("unknown verb", ["frobnicate"], ["unknown verb 'frobnicate'"])
        case("batch 0", ["eval", "--device", "cpu", "--batch", "0", "--seq-len", "8", "--init", "llmc:" + good_model,
                         "--data", good_data], ["--batch: must be positive, got 0"])
        per_item = os.path.join(d, "items.jsonl")
        case("per-item without a task", base + ["--init", "llmc:" + good_model, "--data", good_data, "--per-item", per_item],
             ["--per-item", "--task hellaswag"])
        if os.path.exists(per_item):
            failures.append("per-item without a task: wrote " + per_item)

        # With a tokenizer: a 300-id model, a 260-token tokenizer.
        text = os.path.join(d, "text.txt")
        with open(text, "w") as f:
            f.write("the cat sat on the mat and the dog sat on the log\n" * 50)
        tok = os.path.join(d, "tok.bin")
        subprocess.run([SIXND, "tokenizer", "train", "--input", text, "--vocab-size", "260", "--out", tok], check=True,
                       capture_output=True)
        wide = os.path.join(d, "wide.bin")
        model_file(wide, vocab=300)
        # Shards with ids the tokenizer lacks (no manifest to name their tokenizer) are refused
        # up front naming the shard, not mid-run as "bits per byte: token 290 ...".
        other_ids = os.path.join(d, "other-ids.bin")
        sixnd_files.write_shard(other_ids, [i % 250 for i in range(100)] + [290] + [1] * 100)
        case("shards with ids the tokenizer lacks", base + ["--init", "llmc:" + wide, "--data", other_ids, "--tokenizer", tok],
             [other_ids, "token 290", "position 100", tok, "another tokenizer"])
        hs_base = ["eval", "--device", "cpu", "--dtype", "fp32", "--init", "llmc:" + wide, "--tokenizer", tok,
                   "--task", "hellaswag"]

        def items(name, *lines):
            path = os.path.join(d, name)
            with open(path, "w") as f:
                f.write("".join(line + "\n" for line in lines))
            return path
        good_hs = items("good.jsonl", '{"ctx": "the cat", "endings": ["sat on", "dog"], "label": 0}')
        long_hs = items("long.jsonl", '{"ctx": "the cat", "endings": ["sat on", "dog"], "label": 0}',
                        '{"ctx": "a", "endings": ["%s", "dog"], "label": 0}' % ("on the mat " * 10))
        case("hellaswag: an ending longer than the context names the file and line", hs_base + ["--data", long_hs],
             [long_hs + ":2", "ending 0", "context of 16"])
        # With no context an ending's first token is not scored: a one-token ending would score
        # nothing, loss 0, and win both acc and acc_norm.
        empty_ctx = items("empty-ctx.jsonl", '{"ctx": "", "endings": ["t", "sat on the mat"], "label": 1}')
        case("hellaswag: empty ctx", hs_base + ["--data", empty_ctx], [empty_ctx + ":1", "ctx", "empty"])
        case("hellaswag: --data a directory", hs_base + ["--data", d], [d, "is a directory"])
        case("hellaswag: --data a device", hs_base + ["--data", "/dev/null"], ["/dev/null", "is a device"])
        for flag, value in (("--batch", "4"), ("--seq-len", "8"), ("--batches", "2")):
            case(f"hellaswag: {flag} would be ignored", hs_base + ["--data", good_hs, flag, value],
                 [flag, "--task loss only"])
        dash = os.path.join(d, "-")
        r = subprocess.run([SIXND] + hs_base + ["--data", good_hs, "--per-item", "-"], capture_output=True, text=True, cwd=d)
        if r.returncode == 0 or "--per-item" not in r.stderr or os.path.exists(dash):
            failures.append(f"--per-item -: exit {r.returncode}, a file '-' {'written' if os.path.exists(dash) else 'absent'}: "
                            f"{r.stderr.strip()}")
        print(f"--per-item -: exit {r.returncode}: {r.stderr.strip()}")
        r = subprocess.run([SIXND] + hs_base + ["--data", good_hs], capture_output=True, text=True)
        if r.returncode != 0 or '"acc"' not in r.stdout:
            failures.append("hellaswag on a good item: " + r.stderr)
    return sixnd_files.report(failures, "sixnd eval bad input")


if __name__ == "__main__":
    sys.exit(main())
