"""The flag parsing every verb shares (cli/verbs.cpp, cli/config_file.cpp, cli/main.cpp): a
misspelt flag is named, with the flag it is a typo of, even where a required flag is missing
(CLI11 said only "--train-data is required"); a misspelt verb is named with the verb it is a
typo of; a number given with blanks before it is refused (C's strtoll reads past them, so
" 010" was 8 and " 0x10" 16), and so is a hexadecimal real (0x1p-3 was 0.125); `help = true`
in a config file is refused at its line (it printed the flags and ran nothing, exit 0); a
flag given as "--overwrite=" (a script's unset variable) is refused, not read as --overwrite;
a subcommand's "--out=" is an empty value, as a verb's is, not "--out" taking the next argument
for its value; and --help written to a full disk says why it failed."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
from bad_input import Case, run_cases, SIXND  # noqa: E402

ENV = {"OMP_NUM_THREADS": "1", "ASAN_OPTIONS": "detect_leaks=0"}


def help_to_full_disk():
    r = subprocess.run([SIXND, "train", "--help"], stdout=open("/dev/full", "w"), stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, **ENV), timeout=60)
    lines = r.stderr.splitlines()
    want = "sixnd train: error: stdout: write failed: No space left on device"
    return None if r.returncode == 1 and lines == [want] else f"exit {r.returncode}, stderr {lines}, expected [{want!r}]"


def main():
    with tempfile.TemporaryDirectory(prefix="sixnd_flag_parsing_") as tmp:
        fresh = os.path.join(tmp, "fresh")  # never created: every case is refused before any work
        check = ["train", "--train-data", os.path.join(tmp, "x.bin"), "--out", fresh, "--check"]

        def config(name, *lines):
            p = os.path.join(tmp, name + ".toml")
            with open(p, "w") as f:
                f.write("\n".join(lines) + "\n")
            return p

        os.chdir(tmp)  # where a swallowed flag would become a file's name
        text, tok = os.path.join(tmp, "text.txt"), os.path.join(tmp, "tok.bin")
        with open(text, "w") as f:
            f.write("the cat sat on the mat\n" * 50)
        subprocess.run([SIXND, "tokenizer", "train", "--input", text, "--vocab-size", "260", "--out", tok], check=True,
                       capture_output=True, env=dict(os.environ, **ENV))
        blank_hex = config("blank_hex", "model = tiny", 'steps = " 0x10"')
        helps = config("help", "model = tiny", "help = true")
        data_line = config("data_line", "model = tiny", f"train-data = {os.path.join(tmp, 'x.bin')}")
        cases = [
            Case("a misspelt flag beside a missing required one", ["train", "--trian-data", "x.bin", "--check"],
                 ["not expected: ", "--trian-data", "(did you mean --train-data?)"]),
            Case("an on/off flag given twice", check + ["--overwrite", "--overwrite=false"],
                 ["--overwrite: is given 2 times; give it once"]),
            Case("a subcommand's on/off flag given twice", ["tokenizer", "encode", "--tokenizer", "t.tok", "--ordinary", "--ordinary"],
                 ["--ordinary: is given 2 times"]),
            # ablate passes flags it does not know to train: a missing --out is not taken for a typo.
            Case("ablate without --out, with train flags", ["ablate", "--vary", "lr=1e-3,2e-3", "--train-data", "x.bin"],
                 ["--out is required"]),
            Case("a flag cut short", ["export", "--checkpoint", "ck", "--ou", "o"], ["--ou", "(did you mean --out?)"]),
            Case("a subcommand's misspelt flag", ["tokenizer", "train", "--inptu", "a.txt", "--vocab-size", "300", "--out", "o"],
                 ["--inptu", "(did you mean --input?)"]),
            # The suggestion names a flag the file gives: the fault is still the command line's.
            Case("a misspelt flag that a config file gives", ["train", "--config", data_line, "--check", "--trian-data", "y.bin"],
                 ["sixnd train: error: The following arguments were not expected: ", "(did you mean --train-data?)"]),
            Case("an unknown flag like no other", check + ["--frobnicate"], ["not expected: --frobnicate"]),
            Case("a misspelt verb", ["trian", "--train-data", "x.bin"], ["sixnd: error: unknown verb 'trian' (did you mean train?)"],
                 exit_code=2),
            Case("an integer after a blank", check + ["--steps", " 010"], ["--steps", "without blanks", "' 010'"]),
            Case("a quoted config value after a blank", check + ["--config", blank_hex],
                 [f"{blank_hex}:2: --steps takes a number without blanks", "' 0x10'"]),
            Case("a real after a blank", check + ["--lr", " 0.1"], ["--lr", "without blanks"]),
            Case("a hexadecimal real", check + ["--lr", "0x1p-3"], ["--lr", "takes a decimal number, got '0x1p-3'"]),
            Case("a hexadecimal real, capital X", check + ["--eps", "0X1p-30"], ["--eps", "takes a decimal number, got '0X1p-30'"]),
            Case("help in a config file", check + ["--config", helps], [f"{helps}:2: 'help' is not a setting"]),
            Case("a flag given '=' and nothing", check + ["--overwrite="], ["--overwrite: is given an empty value ('--overwrite=')"]),
            Case("a subcommand's '--out=' before a flag",
                 ["tokenizer", "encode", "--tokenizer", tok, "--input", text, "--out=", "--ordinary"], ["--out: is empty"]),
        ]
        for c in cases:
            c.env = ENV
            c.unchanged = [fresh, os.path.join(tmp, "--ordinary")]
        # What stays legal: a real's exponent after a zero, a leading '+', a decimal real.
        for name, value in [("0e5", "0e5"), ("+0.5", "+0.5"), ("00.5", "00.5")]:
            cases.append(Case(f"--grad-clip {name} is legal", check + ["--grad-clip", value], [], exit_code=0, env=ENV))
        status = run_cases(cases, "flag parsing shared by every verb")
        fault = help_to_full_disk()
        os.chdir("/")
    print(f"{'ok  ' if fault is None else 'FAIL'} --help to a full disk" + ("" if fault is None else f": {fault}"))
    return status or (1 if fault else 0)


if __name__ == "__main__":
    sys.exit(main())
