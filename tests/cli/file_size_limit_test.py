"""Writers past the file-size limit (RLIMIT_FSIZE, the way a quota or `ulimit -f` stops a write):
sixnd ignores SIGXFSZ, so the write fails with EFBIG and the error names the file, instead of the
signal ending the process in silence with its temporary files left beside the output. Each case
leaves the directory exactly as it was: the earlier output whole, no temporary file."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
from bad_input import Case, run_cases, SIXND  # noqa: E402

FIXTURES = os.path.join(os.environ.get("SIXND_SHARED", "../shared"), "fixtures", "tokenizer")
ENV = {"OMP_NUM_THREADS": "1", "ASAN_OPTIONS": "detect_leaks=0"}


def sixnd(*args):
    r = subprocess.run([SIXND] + [str(a) for a in args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"sixnd {' '.join(map(str, args))}: {r.stderr.strip()[-300:]}")
    return r.stdout


def main():
    corpus = os.path.join(FIXTURES, "corpus.en")
    if not os.path.exists(corpus):
        print(f"SKIP: {FIXTURES} is absent (../shared/fixtures)")
        return 77
    d = tempfile.mkdtemp(prefix="sixnd_fsize_")
    try:
        tok, ids, hf = (os.path.join(d, n) for n in ("tok.bin", "ids.bin", "tok.json"))
        sixnd("tokenizer", "train", "--input", corpus, "--vocab-size", 300, "--out", tok)
        sixnd("tokenizer", "encode", "--tokenizer", tok, "--input", corpus, "--out", ids)
        sixnd("tokenizer", "export-hf", "--tokenizer", tok, "--out", hf)
        cases = [
            Case("tokenizer train over an earlier tokenizer", ["tokenizer", "train", "--input", corpus, "--vocab-size",
                                                               "320", "--out", tok],
                 [tok, "File too large"], unchanged=[d], file_size_limit=1000, env=ENV),
            Case("tokenizer encode over an earlier shard", ["tokenizer", "encode", "--tokenizer", tok, "--input", corpus,
                                                            "--out", ids],
                 [ids, "File too large"], unchanged=[d], file_size_limit=4096, env=ENV),
            Case("tokenizer export-hf over an earlier tokenizer.json", ["tokenizer", "export-hf", "--tokenizer", tok,
                                                                         "--out", hf],
                 [hf, "File too large"], unchanged=[d], file_size_limit=1000, env=ENV),
        ]
        return run_cases(cases, "writers past the file-size limit")
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
