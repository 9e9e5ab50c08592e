"""README.md as a new user reads it: what it names exists.
1. every source or test file it cites by path (tests/train/signal_test.py, model/cpu/adamw.cpp,
   its relative links) is in the checkout, and every test it cites by bare name (signal_test.py)
   is somewhere under tests/: a renamed file leaves the "What works" table pointing at nothing;
2. the Layout block names every script in scripts/ (it left out cpu_isa_check.sh, which run.sh
   and test.sh run first);
3. every verb `sixnd --help` lists is in the verb block, and every device key `sixnd plan
   --device` takes is in "Plan a run"'s list of them."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "util"))
from sixnd_files import report  # noqa: E402

SRC = os.environ.get("SIXND_SOURCE") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIXND = os.environ.get("SIXND_BIN") or os.path.join(SRC, "build", "sixnd")
ROOMS = ("bench", "cli", "core", "data", "dist", "model", "plan", "scripts", "tests", "tokenizer", "train")


def section(text, heading):
    """The text under `## heading`, up to the next `## `."""
    start = text.index("## " + heading + "\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def main():
    failures = []
    with open(os.path.join(SRC, "README.md"), encoding="utf-8") as f:
        readme = f.read()

    cited = set(re.findall(r"\b((?:%s)/[\w./-]+\.(?:py|cpp|h|sh|md|csv|png))\b" % "|".join(ROOMS), readme))
    cited |= {p for p in re.findall(r"\]\(([^)]+)\)", readme) if not p.startswith(("../", "http"))}
    for path in sorted(cited):
        if not os.path.exists(os.path.join(SRC, path)):
            failures.append(f"README cites {path}, which is not in the checkout")
    test_names = {n for _, _, files in os.walk(os.path.join(SRC, "tests")) for n in files}
    for name in sorted(set(re.findall(r"(?<![\w/])(\w+_test\.(?:py|cpp|sh))", readme))):
        if name not in test_names:
            failures.append(f"README cites the test {name}, which is nowhere under tests/")

    layout = section(readme, "Layout")
    scripts_line = layout[layout.index("\nscripts/"):]
    scripts = os.path.join(SRC, "scripts")
    for name in sorted(n for n in os.listdir(scripts) if os.path.isfile(os.path.join(scripts, n))):
        stem = os.path.splitext(name)[0]
        if not re.search(r"\b%s\b" % re.escape(stem), scripts_line):
            failures.append(f"README's Layout does not name scripts/{name}")

    verbs = subprocess.run([SIXND, "--help"], capture_output=True, text=True).stdout
    start = readme.index("sixnd tokenizer train|")
    verb_block = readme[start:readme.index("```", start)]
    for verb in re.findall(r"^  (\w+)  ", verbs, re.M):
        if f"sixnd {verb} " not in verb_block:
            failures.append(f"README's verb block leaves out `sixnd {verb}`")

    refused = subprocess.run([SIXND, "plan", "--params", "1e9", "--device", "no-such-device"],
                             capture_output=True, text=True)
    known = re.search(r"\(known: ([^)]*)\)", refused.stderr)
    if refused.returncode == 0 or not known:
        failures.append(f"sixnd plan --device no-such-device: no list of known devices: {refused.stderr.strip()!r}")
    else:
        plan = section(readme, "Plan a run")
        listed = plan[:plan.index("a model (")]
        for key in known.group(1).split(", "):
            if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(key), listed):
                failures.append(f"sixnd plan takes --device {key}, which \"Plan a run\" does not list")
    return report(failures, "README names only files, scripts, verbs and devices that exist")


if __name__ == "__main__":
    sys.exit(main())
