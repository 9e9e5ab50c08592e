"""Bad input to `sixnd sample` and `sixnd eval`, one table: flags out of range, prompts that do
not parse or do not fit the context, models with NaN weights, an llm.c header that claims an
absurd model. Each case ends with one error line naming the flag or file and the fault. Also:
sample writes the text's bytes as they are (a decoded zero byte does not end the output)."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import numpy as np  # noqa: E402
import sixnd_files  # noqa: E402
from bad_input import Case, run_cases, SIXND  # noqa: E402

ENV = {"OMP_NUM_THREADS": "1", "ASAN_OPTIONS": "detect_leaks=0"}
L, NH, C, V, MAXT = 1, 2, 16, 50, 16
VP = (V + 127) // 128 * 128
NPARAMS = VP * C + MAXT * C + L * (12 * C * C + 13 * C) + 2 * C


def llmc_file(path, params, header=None):
    h = [0] * 256
    h[:8] = header or [20240326, 3, MAXT, V, L, NH, C, VP]
    with open(path, "wb") as f:
        f.write(struct.pack("256i", *h))
        f.write(np.asarray(params, dtype=np.float32).tobytes())


def main():
    tmp = tempfile.mkdtemp(prefix="sixnd_bad_sample_")
    try:
        return run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp):
    env = dict(os.environ, **ENV)
    data = os.path.join(tmp, "bytes.bin")
    sixnd_files.write_shard(data, [(i * 7) % 256 for i in range(3000)])
    out = os.path.join(tmp, "run")
    r = subprocess.run([SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "256", "--max-seq-len", "16",
                        "--device", "cpu", "--dtype", "fp32", "--train-data", data, "--batch", "1", "--seq-len", "8",
                        "--steps", "1", "--peak-tflops", "1", "--out", out], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print(r.stderr)
        return sixnd_files.report(["training the byte-level model failed"], "sixnd sample bad input")
    ck = os.path.join(out, "checkpoints", "step-00000001")

    def sample(*extra, max_tokens="2"):
        return ["sample", "--checkpoint", ck, "--device", "cpu", "--max-tokens", max_tokens] + list(extra)

    def ids(value, words):
        return Case(f"--prompt-ids '{value}'", sample("--prompt-ids", value), ["--prompt-ids"] + words, env=ENV)

    def default_fits():
        r = subprocess.run([SIXND, "sample", "--checkpoint", ck, "--device", "cpu", "--prompt", "x" * 10],
                           capture_output=True, env=env)
        ok = r.returncode == 0 and r.stdout.startswith(b"x" * 10) and len(r.stdout) == 10 + 7 + 1
        return None if ok else f"exit {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr[-300:]!r}"

    cases = [
        ids("1,,2", ["''"]), ids("1x", ["'1x'"]), ids("-1", ["'-1'"]), ids(" 1", ["' 1'"]), ids("", ["empty"]),
        ids("1,", ["''"]), ids("256", ["vocabulary of 256"]), ids("99999999999999999999999", ["not a token id"]),
        Case("--prompt and --prompt-ids", sample("--prompt", "ab", "--prompt-ids", "1"), ["--prompt-ids", "either"], env=ENV),
        # An unset variable in a script: not the flag left out.
        Case("--tokenizer ''", sample("--prompt", "a", "--tokenizer", ""), ["--tokenizer", "empty"], env=ENV),
        Case("--init '' beside --checkpoint", sample("--prompt", "a", "--init", ""), ["--init", "empty"], env=ENV),
        Case("--temperature -1", sample("--prompt", "a", "--temperature", "-1"), ["--temperature", ">= 0"], env=ENV),
        Case("--temperature nan", sample("--prompt", "a", "--temperature", "nan"), ["--temperature", "finite"], env=ENV),
        # Past the float range: quoted as given, not as the inf it parses to.
        Case("--temperature 3.5e38", sample("--prompt", "a", "--temperature", "3.5e38"), ["--temperature", "got 3.5e38"],
             env=ENV),
        Case("--top-p 1e-50", sample("--prompt", "a", "--top-p", "1e-50"), ["--top-p", "got 1e-50"], env=ENV),
        Case("--top-k -1", sample("--prompt", "a", "--top-k", "-1"), ["--top-k"], env=ENV),
        Case("--top-k beyond the vocabulary", sample("--prompt", "a", "--top-k", "1000"), ["--top-k", "vocabulary of 256"],
             env=ENV),
        Case("--samples 0", sample("--prompt", "a", "--samples", "0"), ["--samples"], env=ENV),
        Case("--samples -3", sample("--prompt", "a", "--samples", "-3"), ["--samples"], env=ENV),
        Case("--max-tokens 0", sample("--prompt", "a", max_tokens="0"), ["--max-tokens", "positive"], env=ENV),
        Case("--max-tokens beyond the context", sample("--prompt", "abcd", max_tokens="14"),
             ["--max-tokens", "context of 16", "at most 13"], env=ENV),
        Case("prompt fills the context", sample("--prompt", "x" * 17, max_tokens="1"), ["--prompt", "context of 16"], env=ENV),
        Case("a prompt as long as the context predicts one token", sample("--prompt", "x" * 16, max_tokens="1"), [],
             exit_code=0, env=ENV),
        # The default --max-tokens (64) is more than a context of 16 leaves: it generates what
        # fits (16 - 10 + 1 tokens) instead of failing over a flag the user never gave.
        Case("the default --max-tokens fits the context",
             ["sample", "--checkpoint", ck, "--device", "cpu", "--prompt", "x" * 10], [], exit_code=0, env=ENV,
             check=lambda: default_fits()),
        Case("no such checkpoint", ["sample", "--checkpoint", os.path.join(tmp, "none"), "--prompt", "a"],
             ["none", "no such checkpoint"], env=ENV),
    ]

    # eval on weights with a NaN, and an llm.c header claiming 1e8 layers.
    good = os.path.join(tmp, "good.bin")
    rng = np.random.default_rng(0)
    llmc_file(good, rng.normal(0, 0.02, NPARAMS))
    nan = os.path.join(tmp, "nan.bin")
    p = rng.normal(0, 0.02, NPARAMS)
    p[1234] = np.nan
    llmc_file(nan, p)
    huge = os.path.join(tmp, "huge.bin")
    llmc_file(huge, np.zeros(100), header=[20240326, 3, MAXT, V, 100000000, NH, C, VP])
    shard = os.path.join(tmp, "eval.bin")
    sixnd_files.write_shard(shard, [i % V for i in range(200)])
    ev = ["eval", "--device", "cpu", "--dtype", "fp32", "--batch", "2", "--seq-len", "8", "--data", shard]
    cases += [
        Case("eval: NaN weights", ev + ["--init", "llmc:" + nan], [nan, "non-finite"], env=ENV),
        Case("eval: header claims 1e8 layers", ev + ["--init", "llmc:" + huge], [huge, "beyond any real model", "n_layer=100000000"],
             env=dict(ENV, ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1"), timeout=20),
        Case("eval: good weights", ev + ["--init", "llmc:" + good], [], exit_code=0, env=ENV),
        Case("--version", ["--version"], [], exit_code=0, env=ENV),
    ]
    # Tokenizers against the model: one with more tokens than the model has ids is refused;
    # with fewer (a model of 300 ids trained with a 260-token tokenizer) only its ids are drawn,
    # however flat the barely trained model's distribution.
    text = os.path.join(tmp, "text.txt")
    with open(text, "w") as f:
        f.write("the cat sat on the mat and the dog sat on the log\n" * 50)
    tok = os.path.join(tmp, "tok260.bin")
    subprocess.run([SIXND, "tokenizer", "train", "--input", text, "--vocab-size", "260", "--out", tok], check=True,
                   capture_output=True, env=env)
    wide = os.path.join(tmp, "wide")
    subprocess.run([SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "300", "--max-seq-len", "16",
                    "--device", "cpu", "--dtype", "fp32", "--train-data", data, "--tokenizer", tok, "--batch", "1",
                    "--seq-len", "8", "--steps", "1", "--peak-tflops", "1", "--out", wide], check=True, capture_output=True,
                   env=env)
    wide_ck = os.path.join(wide, "checkpoints", "step-00000001")
    # Another 260-token tokenizer (other text, so other merges): the same size, other ids.
    other_text = os.path.join(tmp, "other.txt")
    with open(other_text, "w") as f:
        f.write("zebra quartz jumps over vexed wizards\n" * 50)
    other_tok = os.path.join(tmp, "other260.bin")
    subprocess.run([SIXND, "tokenizer", "train", "--input", other_text, "--vocab-size", "260", "--out", other_tok],
                   check=True, capture_output=True, env=env)
    exported = os.path.join(tmp, "exported")

    # A model trained on nothing but end-of-text draws it greedily at once.
    eot_tok = os.path.join(tmp, "tok_eot.bin")
    subprocess.run([SIXND, "tokenizer", "train", "--input", text, "--vocab-size", "260", "--special", "<|endoftext|>",
                    "--out", eot_tok], check=True, capture_output=True, env=env)
    eot_id = "259"  # the special comes last
    eot_data = os.path.join(tmp, "eot.bin")
    sixnd_files.write_shard(eot_data, [int(eot_id)] * 3000)
    eot_run = os.path.join(tmp, "eot_run")
    subprocess.run([SIXND, "train", "--init", "random", "--model", "tiny", "--vocab-size", "300", "--max-seq-len", "16",
                    "--device", "cpu", "--dtype", "fp32", "--train-data", eot_data, "--tokenizer", eot_tok, "--batch", "2",
                    "--seq-len", "8", "--steps", "30", "--lr", "1e-2", "--schedule", "constant", "--peak-tflops", "1",
                    "--out", eot_run], check=True, capture_output=True, env=env)
    eot_ck = os.path.join(eot_run, "checkpoints", "step-00000030")

    def stops_at_eot():
        """A sample from --prompt-ids ends at <|endoftext|> as one from --prompt does: the prompt,
        then the one end-of-text the model draws, not eight."""
        faults = []
        for prompt in (["--prompt", "<|endoftext|>"], ["--prompt-ids", eot_id]):
            r = subprocess.run([SIXND, "sample", "--checkpoint", eot_ck, "--device", "cpu", "--max-tokens", "8",
                                "--temperature", "0"] + prompt, capture_output=True, text=True, env=env)
            if r.returncode != 0 or r.stdout.count("<|endoftext|>") != 2:
                faults.append(f"{prompt[0]}: exit {r.returncode}, stdout {r.stdout!r}")
        return "; ".join(faults) or None
    cases += [
        Case("sample --dtype with a checkpoint of another dtype", sample("--prompt", "a", "--dtype", "bf16"),
             ["--dtype", "holds fp32 weights", "drop --dtype bf16"], env=ENV),
        Case("sample --tokenizer not the one the checkpoint was trained with",
             ["sample", "--checkpoint", wide_ck, "--prompt", "the", "--tokenizer", other_tok],
             [other_tok, "was trained with tokenizer", "leave out --tokenizer"], env=ENV),
        Case("export --tokenizer not the one the checkpoint was trained with",
             ["export", "--checkpoint", wide_ck, "--out", exported, "--tokenizer", other_tok],
             [other_tok, "was trained with tokenizer"], unchanged=[exported], env=ENV),
        Case("eval --tokenizer not the one the checkpoint was trained with",
             ["eval", "--checkpoint", wide_ck, "--device", "cpu", "--batch", "1", "--seq-len", "8", "--data", data,
              "--tokenizer", other_tok], [other_tok, "was trained with tokenizer"], env=ENV),
        Case("sample from --prompt-ids stops at <|endoftext|> as from --prompt", ["--version"], [], exit_code=0,
             check=stops_at_eot, env=ENV),
        Case("sample --tokenizer larger than the model", sample("--prompt", "a", "--tokenizer", tok),
             [tok, "260 tokens", "vocabulary of 256"], env=ENV),
        Case("sample --checkpoint given a run directory", ["sample", "--checkpoint", out, "--prompt", "a"],
             [out, "run directory", "step-00000001"], env=ENV),
        Case("sample --prompt-ids beyond the tokenizer", ["sample", "--checkpoint", wide_ck, "--prompt-ids", "270"],
             ["--prompt-ids", "270", "tokenizer's vocabulary of 260"], env=ENV),
        Case("sample draws only the tokenizer's ids",
             ["sample", "--checkpoint", wide_ck, "--prompt", "the", "--max-tokens", "14", "--samples", "20",
              "--temperature", "5", "--device", "cpu"], [], exit_code=0, env=ENV),
        Case("eval --batches 0", ev + ["--init", "llmc:" + good, "--batches", "0"], ["--batches", "at least 1"], env=ENV),
        Case("eval --tokenizer larger than the model", ev + ["--init", "llmc:" + good, "--tokenizer", tok],
             [tok, "260 tokens", f"vocabulary of {V}"], env=ENV),
    ]
    # The bytes of the text, a zero byte included: prompt "A\0B" on the byte-level model.
    zero = sample("--prompt-ids", "65,0,66", "--temperature", "0")

    def zero_byte_kept():
        r = subprocess.run([SIXND] + zero, capture_output=True, env=env)
        ok = r.stdout.startswith(b"A\x00B") and len(r.stdout) == 3 + 2 + 1
        return None if ok else f"stdout {r.stdout!r} does not hold the prompt's bytes and two more"
    cases.append(Case("sample writes a zero byte", zero, [], exit_code=0, check=zero_byte_kept, env=ENV))

    # Output lost to a full disk is a failure: exit 1 and one error line naming stdout and why.
    def full_stdout(args):
        def check():
            with open("/dev/full", "w") as full:
                r = subprocess.run([SIXND] + args, stdout=full, stderr=subprocess.PIPE, text=True, env=env)
            said = [x for x in r.stderr.splitlines() if "error" in x]
            ok = r.returncode == 1 and len(said) == 1 and "stdout: write failed: No space left on device" in said[0]
            return None if ok else f"exit {r.returncode}, stderr {r.stderr[-300:]!r}"
        return check
    if os.path.exists("/dev/full"):
        for name, a in (("sample", sample("--prompt", "a")), ("eval", ev + ["--init", "llmc:" + good]),
                        ("--version", ["--version"])):
            cases.append(Case(f"{name} with stdout on a full disk", ["--version"], [], exit_code=0, check=full_stdout(a),
                              env=ENV))
    return run_cases(cases, "sixnd sample and eval bad input")


if __name__ == "__main__":
    sys.exit(main())
