"""What `sixnd sample` takes as its model, says of it, and prints as its prompt:
- `--init random` (which eval and train take) is refused: untrained weights sample noise, and
  `sample --help` offers llmc:PATH and hf:DIR only;
- weights whose activations overflow (NaN logits) end in one error line naming the model file;
- an empty prompt starts the sample at <|endoftext|> (a document's start) without printing that
  stand-in: the output is what the model drew, the sample from `--prompt-ids EOT` with the same
  seed less its leading "<|endoftext|>"; a prompt the user spelt "<|endoftext|>" is printed."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import checklist  # noqa: E402
import numpy as np  # noqa: E402
import tiny_text  # noqa: E402
from checklist import check  # noqa: E402

EOT = b"<|endoftext|>"


def main():
    tmp = tempfile.mkdtemp(prefix="sixnd_sample_input_")
    try:
        run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return checklist.verdict()


def run(tmp):
    r = tiny_text.sixnd("sample", "--init", "random", "--prompt-ids", "1", "--max-tokens", "2", "--device", "cpu",
                        check=False)
    errors = [x for x in r.stderr.splitlines() if "error" in x]
    check(r.returncode == 1 and len(errors) == 1 and "--init" in errors[0] and "'random'" in errors[0]
          and r.stdout == "", f"sample --init random is refused naming --init: exit {r.returncode}, {r.stderr.strip()!r}")

    # Every weight 1e30: finite, and the activations overflow at the first matmul.
    overflow = os.path.join(tmp, "overflow.bin")
    L, NH, C, V, MAXT, VP = 1, 2, 16, 50, 16, 128
    with open(overflow, "wb") as f:
        f.write(struct.pack("256i", *([20240326, 3, MAXT, V, L, NH, C, VP] + [0] * 248)))
        f.write(np.full(VP * C + MAXT * C + L * (12 * C * C + 13 * C) + 2 * C, 1e30, np.float32).tobytes())
    r = tiny_text.sixnd("sample", "--init", "llmc:" + overflow, "--prompt-ids", "1,2", "--max-tokens", "3", "--device",
                        "cpu", check=False)
    errors = [x for x in r.stderr.splitlines() if "error" in x]
    check(r.returncode == 1 and len(errors) == 1 and "llmc:" + overflow in errors[0] and "not finite" in errors[0],
          f"NaN logits: one error naming the model file: exit {r.returncode}, {r.stderr.strip()!r}")

    # A model file without a tokenizer, a text prompt: no checkpoint to have held one is named.
    r = tiny_text.sixnd("sample", "--init", "llmc:" + overflow, "--prompt", "hi", "--max-tokens", "3", "--device",
                        "cpu", check=False)
    errors = [x for x in r.stderr.splitlines() if "error" in x]
    check(r.returncode == 1 and len(errors) == 1 and "no tokenizer (no --tokenizer)" in errors[0] and
          "--prompt-ids" in errors[0], f"a text prompt without a tokenizer: exit {r.returncode}, {r.stderr.strip()!r}")

    text = os.path.join(tmp, "text.txt")
    with open(tiny_text.CORPUS, "rb") as f, open(text, "wb") as out:
        out.write(f.read(20_000))
    tok, shard = os.path.join(tmp, "tok.bin"), os.path.join(tmp, "train.bin")
    tiny_text.sixnd("tokenizer", "train", "--input", text, "--vocab-size", "300", "--special", "<|endoftext|>",
                    "--out", tok, "--threads", "1")
    tiny_text.sixnd("tokenizer", "encode", "--tokenizer", tok, "--input", text, "--out", shard, "--threads", "1")
    run_dir = os.path.join(tmp, "run")
    tiny_text.sixnd("train", "--init", "random", "--model", "tiny", "--vocab-size", "320", "--max-seq-len", "32",
                    "--device", "cpu", "--dtype", "fp32", "--train-data", shard, "--tokenizer", tok, "--batch", "2",
                    "--seq-len", "16", "--steps", "2", "--peak-tflops", "1", "--out", run_dir)
    ck = os.path.join(run_dir, "checkpoints", "step-00000002")
    eot_id = "299"  # the special comes last

    def sample(*prompt):
        r = subprocess.run([tiny_text.SIXND, "sample", "--checkpoint", ck, "--device", "cpu", "--max-tokens", "6",
                            "--temperature", "1.5", "--seed", "3", *prompt], capture_output=True, env=tiny_text.ENV)
        if r.returncode != 0:
            raise RuntimeError(f"sample {prompt} failed: {r.stderr[-400:]!r}")
        return r.stdout

    from_eot = sample("--prompt-ids", eot_id)
    check(from_eot.startswith(EOT), f"--prompt-ids {eot_id} prints its prompt: {from_eot!r}")
    drawn = from_eot[len(EOT):]
    for name, prompt in (("--prompt ''", ["--prompt", ""]), ("no prompt", [])):
        out = sample(*prompt)
        check(out == drawn, f"{name}: the sample drawn after <|endoftext|>, without it: {out!r}, expected {drawn!r}")
    spelt = sample("--prompt", "<|endoftext|>")
    check(spelt == from_eot, f"--prompt '<|endoftext|>' prints it: {spelt!r}")


if __name__ == "__main__":
    sys.exit(main())
