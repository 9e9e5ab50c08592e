"""Bad input to `sixnd data prepare` (and to the token-set reader that training and eval share):
each case ends with one error line naming the file or flag and the fault, the expected exit
code, and the paths that must be exactly as they were — device nodes, symbolic links and their
targets, sources, tokenizers, directories sixnd did not write. Also: the source walk skips an
earlier output and survives a directory-link loop, SIGTERM leaves no partial directory, and a
partial left by a killed run is removed by the next (an old output it had moved aside is put
back). Device nodes need root (os.mknod); without it those cases are left out and the closing
line says so."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
from bad_input import SIXND, Case, run_cases, snapshot  # noqa: E402
import rename_signal  # noqa: E402

if not os.environ.get("SIXND_BIN"):
    print("skip: SIXND_BIN is not set")
    sys.exit(77)

PARAGRAPH = """The river{i} runs past the old mill, and the children walk along it with their dogs every morning.
In spring the water rises over the stones and the miller opens the sluice to let it pass.
Nobody in the village remembers when the wheel last turned, but the building is kept in good repair.
On summer evenings people sit on the wall by the bridge and watch the swallows hunt for insects.
The school teacher says that the mill was built with stone carried from a quarry in the hills.
"""


def write(path, text, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(text)


WORDS = ("apple river stone bridge quiet morning garden letter window market yellow silver winter summer "
         "forest candle engine harbor pencil ladder").split()


def random_text(seed, n=80):
    """Words in a seeded order: documents no filter or deduplication takes for each other's copies."""
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "\n"


def dead_pid():
    """A process id that no process has now."""
    for pid in range(4_000_000, 3_000_000, -7919):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
    raise RuntimeError("no free pid found")


def dangling_source(d, doc):
    """A source directory with one document and a link to a file that is gone."""
    os.makedirs(d, exist_ok=True)
    shutil.copy(doc, os.path.join(d, "doc.txt"))
    if not os.path.lexists(os.path.join(d, "gone.txt")):
        os.symlink(os.path.join(d, "no_such_file.txt"), os.path.join(d, "gone.txt"))


def all_files_skipped(args, out):
    """None when a run whose every file is skipped under --on-error skip fails saying so, not "empty files?"."""
    r = subprocess.run([SIXND] + args, capture_output=True, text=True)
    last = (r.stderr.strip().splitlines() or [""])[-1]
    if r.returncode != 1 or "--source" not in last or "1 of 1 file(s) skipped as unreadable" not in last:
        return f"exit {r.returncode}, last line: {last}"
    return f"{out} written" if os.path.exists(out) else None


def main():
    with tempfile.TemporaryDirectory() as d:
        p = lambda *names: os.path.join(d, *names)  # noqa: E731
        for i in range(6):
            write(p("src", f"doc{i}.txt"), PARAGRAPH.format(i=i))
        write(p("tok_corpus.txt"), "".join(PARAGRAPH.format(i=i) for i in range(20)))
        tok = p("tok.bin")
        r = subprocess.run([SIXND, "tokenizer", "train", "--input", p("tok_corpus.txt"), "--vocab-size", "300",
                            "--special", "<|endoftext|>", "--out", tok], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        prep = ["data", "prepare", "--tokenizer", tok, "--val-fraction", "0.2"]
        good = prep + ["--source", "s=" + p("src")]

        # An earlier output, and things that only look like one.
        r = subprocess.run([SIXND] + good + ["--out", p("old")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        shutil.copytree(p("old"), p("old_plus"))
        write(p("old_plus", "notes.txt"), "mine\n")
        os.mkdir(p("mine"))
        write(p("mine", "thesis.tex"), "years of work\n")
        write(p("afile"), "a regular file\n")
        os.symlink(p("old"), p("link_to_old"))
        # Inputs with faults.
        write(p("gz", "plain.txt.gz"), PARAGRAPH.format(i="gz"))
        write(p("srcgz", "doc.txt"), PARAGRAPH.format(i="x"))

        dev = None
        if os.geteuid() == 0:
            dev = p("null")
            os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))  # a character device like /dev/null

        def manifest_inputs(out):
            with open(os.path.join(out, "manifest.json")) as f:
                return [x["path"] for x in json.load(f)["inputs"]]

        # A source tree holding texts, an earlier output and a loose shard: only the texts are read.
        shutil.copytree(p("src"), p("walkroot", "texts"))
        shutil.copytree(p("old"), p("walkroot", "prepared_before"))
        shutil.copy(p("old", "train_000000.bin"), p("walkroot", "texts", "loose.bin"))

        def walk_skips_old_output():
            paths = manifest_inputs(p("out_walk"))
            bad = [x for x in paths if "prepared_before" in x or x.endswith(".bin")]
            if bad:
                return f"ingested an earlier output: {bad}"
            return None if len(paths) == 6 else f"expected the 6 texts, got {paths}"

        def loop_listed_once():
            paths = manifest_inputs(p("out_loop"))
            return None if len(paths) == 6 else f"expected the 6 files once each, got {len(paths)}: {paths}"

        def setup_loop():
            if not os.path.lexists(p("src", "loop")):
                os.symlink(p("src"), p("src", "loop"))

        def remove_loop():
            os.unlink(p("src", "loop"))
            return loop_listed_once()

        stale = p("out_stale.partial-%d" % dead_pid())
        odd_stale = p("out_stale.partial-%d" % (dead_pid() - 1))

        def setup_stale():
            write(os.path.join(stale, "tokens.tmp"), "x")
            write(os.path.join(stale, "train_000000.bin"), "x")
            write(os.path.join(odd_stale, "keepme.txt"), "x")

        def stale_removed():
            if os.path.exists(stale):
                return f"{stale} is still there"
            if not os.path.exists(os.path.join(odd_stale, "keepme.txt")):
                return "a partial holding a foreign file was removed"
            return None

        # An --out whose name leaves no room for ".partial-PID" within NAME_MAX (255 bytes): the
        # sibling's name is cut to fit (core/sibling_name.h), and a killed run's cut sibling is found.
        long_name = "o" * 250

        def cut_sibling(suffix):
            return p(long_name[:255 - len(suffix)] + suffix)

        long_stale = cut_sibling(".partial-%d" % (dead_pid() - 3))

        def setup_long_stale():
            write(os.path.join(long_stale, "tokens.tmp"), "x")

        def long_out_written():
            left = sorted(n for n in os.listdir(d) if n.startswith("ooo") and n != long_name)
            if left:
                return f"siblings left beside the 250-byte --out: {[n[-20:] for n in left]}"
            return None if os.path.isfile(p(long_name, "manifest.json")) else "no manifest.json in the 250-byte --out"

        # A run killed between moving the old output aside and renaming the new one in.
        aside = p("out_aside.old-%d" % (dead_pid() - 2))
        aside_before = []

        def setup_aside():
            shutil.copytree(p("old"), aside)
            aside_before.append(snapshot(aside))

        def aside_put_back():
            if os.path.exists(aside):
                return f"{aside} is still there"
            if snapshot(p("out_aside")) != aside_before[0]:
                return "out_aside is not the output that was moved aside"
            return None

        # Shards changed after the manifest was written, or a manifest pointing out of its directory.
        shutil.copytree(p("old"), p("tampered"))
        with open(p("tampered", "train_000000.bin"), "r+b") as f:
            f.seek(1024)
            b = f.read(2)
            f.seek(1024)
            f.write(bytes([b[0] ^ 1, b[1]]))
        shutil.copytree(p("old"), p("escaping"))
        with open(p("escaping", "manifest.json")) as f:
            m = json.load(f)
        m["output"]["train"]["shards"][0]["file"] = "../old/train_000000.bin"
        with open(p("escaping", "manifest.json"), "w") as f:
            json.dump(m, f)
        def no_partial(out):
            """A refused run leaves no OUT.partial-PID beside --out."""
            left = [n for n in os.listdir(os.path.dirname(out)) if n.startswith(os.path.basename(out) + ".partial-")]
            return f"left {left}" if left else None

        def manifest(out):
            with open(os.path.join(out, "manifest.json")) as f:
                return json.load(f)

        # A source file named in Latin-1 ("café"): manifest.json, being JSON, cannot record the name.
        latin1 = os.fsdecode(os.path.join(os.fsencode(p("latin1_src")), b"caf\xe9.txt"))
        os.makedirs(p("latin1_src"))
        shutil.copy(p("src", "doc0.txt"), latin1)

        # The largest seed is recorded exactly, and the recorded seed makes the same data again
        # (distinct documents, so that the seed's split and shuffle show in the shards).
        max_seed = 2**64 - 1
        no_filters = ["--no-langid", "--no-quality", "--no-repetition"]
        for i in range(8):
            write(p("seed_src", f"doc{i}.txt"), random_text(i))
        seeded = prep + ["--source", "s=" + p("seed_src")] + no_filters

        def seed_round_trip():
            config = manifest(p("o_seed_max"))["config"]
            recorded = config["seed"]
            if recorded != max_seed:
                return f"manifest records seed {recorded}, the run used {max_seed}"
            # A text flag is recorded as text, whatever it spells.
            if config["jsonl-field"] != "123":
                return f"manifest records --jsonl-field 123 as {config['jsonl-field']!r}"
            for out, seed in (("o_seed_again", recorded), ("o_seed_other", 2**63 - 1)):
                r = subprocess.run([SIXND] + seeded + ["--out", p(out), "--seed", str(seed)], capture_output=True, text=True)
                if r.returncode != 0:
                    return f"rerun with seed {seed}: {r.stderr.strip()[-300:]}"
            if manifest(p("o_seed_again"))["output"] != manifest(p("o_seed_max"))["output"]:
                return "a rerun with the recorded seed made other shards"
            if manifest(p("o_seed_other"))["output"] == manifest(p("o_seed_max"))["output"]:
                return "seeds 2^63-1 and 2^64-1 made the same shards: this check could not tell them apart"
            return None

        # JSONL text holding invalid UTF-8 goes to --invalid-utf8 as plain text does.
        lines = [json.dumps({"text": random_text(100 + i)}).encode() for i in range(4)]
        lines[0] = lines[0].replace(b'"text": "', b'"text": "\xff\xfe ', 1)
        write(p("inv", "x.jsonl"), b"\n".join(lines) + b"\n", "wb")

        def ingest_stage(out, want_repaired, want_removed):
            st = manifest(out)["stages"][0]
            got = (st["invalid_utf8_repaired"], st["removed_by"])
            return None if got == (want_repaired, want_removed) else f"ingest stage: {got}, expected {(want_repaired, want_removed)}"

        ev = ["eval", "--init", "random", "--model", "tiny", "--vocab-size", "300", "--batch", "1", "--seq-len", "4",
              "--device", "cpu", "--dtype", "fp32", "--data"]
        # A tokenizer of the same size that did not make the shards: bits per byte would count
        # another tokenizer's bytes.
        write(p("other_corpus.txt"), "a quick brown fox jumps over the lazy dog again and again. " * 60)
        other_tok = p("other_tok.bin")
        r = subprocess.run([SIXND, "tokenizer", "train", "--input", p("other_corpus.txt"), "--vocab-size", "300",
                            "--special", "<|endoftext|>", "--out", other_tok], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        tr = ["train", "--init", "random", "--model", "tiny", "--vocab-size", "300", "--max-seq-len", "16", "--batch", "1",
              "--seq-len", "4", "--steps", "1", "--device", "cpu", "--dtype", "fp32", "--train-data",
              p("old", "train_*.bin"), "--out", p("r_other")]

        cases = [
            Case("--tokenizer ''", [a if a != tok else "" for a in good] + ["--out", p("empty_tok_out")],
                 ["--tokenizer", "empty"]),
            Case("--out a symlink, --overwrite", good + ["--out", p("link_to_old"), "--overwrite"],
                 ["--out", "link_to_old", "symbolic link"], unchanged=[p("link_to_old"), p("old")]),
            Case("--out a regular file, --overwrite", good + ["--out", p("afile"), "--overwrite"],
                 ["--out", "afile", "regular file"], unchanged=[p("afile")]),
            Case("--out a directory sixnd did not write, --overwrite", good + ["--out", p("mine"), "--overwrite"],
                 ["--out", "mine", "no sixnd data manifest"], unchanged=[p("mine")]),
            Case("--out an earlier output holding a user file, --overwrite",
                 good + ["--out", p("old_plus"), "--overwrite"], ["--out", "notes.txt"], unchanged=[p("old_plus")]),
            Case("--out an earlier output, --overwrite", good + ["--out", p("old"), "--overwrite"], [], exit_code=0),
            Case("--out is the source", good + ["--out", p("src"), "--overwrite"], ["--out", "--source s"],
                 unchanged=[p("src")]),
            Case("--out inside the source", good + ["--out", p("src", "prepared")], ["--out", "is inside", "--source s"],
                 unchanged=[p("src")]),
            Case("--out contains the source", prep + ["--source", "s=" + p("old_plus"), "--out", d, "--overwrite"],
                 ["--out", "contains"], unchanged=[p("old_plus"), tok]),
            Case("--out contains the tokenizer", ["data", "prepare", "--tokenizer", p("old_plus", "notes.txt"),
                                                  "--source", "s=" + p("src"), "--out", p("old_plus"), "--overwrite"],
                 ["--out", "--tokenizer"], unchanged=[p("old_plus")]),
            Case("--out empty", good + ["--out", ""], ["--out"]),
            Case("--out an existing empty directory (made first with mkdir)", good + ["--out", p("empty_out")], [],
                 exit_code=0, setup=lambda: os.makedirs(p("empty_out"), exist_ok=True),
                 check=lambda: None if os.path.isfile(p("empty_out", "manifest.json")) else "no manifest written"),
            Case("--out in a directory that does not exist", good + ["--out", p("no_such_dir", "out")],
                 ["--out", "no_such_dir", "does not exist"], unchanged=[p("no_such_dir")]),
            # The output is built beside --out: beside "." is inside it, which failed the run at its end.
            Case("--out the empty current directory", good + ["--out", p("dot_out", ".")],
                 ["--out", "dot_out/.", "name the output directory itself"], unchanged=[p("dot_out")],
                 setup=lambda: os.makedirs(p("dot_out"), exist_ok=True)),
            Case("a dangling symbolic link in a source directory", prep + ["--source", "s=" + p("dangling_src"), "--out",
                 p("o_dangling")], ["gone.txt", "symbolic link", "does not exist"], unchanged=[p("o_dangling")],
                 setup=lambda: dangling_source(p("dangling_src"), p("src", "doc0.txt"))),
            Case("a dangling symbolic link with --on-error skip", prep + ["--source", "s=" + p("dangling_src"), "--out",
                 p("o_dangling_skip"), "--on-error", "skip"], [], exit_code=0,
                 setup=lambda: dangling_source(p("dangling_src"), p("src", "doc0.txt"))),
            Case("walk skips an earlier output", prep + ["--source", "s=" + p("walkroot"), "--out", p("out_walk")],
                 [], exit_code=0, check=walk_skips_old_output),
            Case("walk survives a directory-link loop", good + ["--out", p("out_loop")], [], exit_code=0,
                 setup=setup_loop, check=remove_loop),
            Case("stale partial of a killed run removed", good + ["--out", p("out_stale")], [], exit_code=0,
                 setup=setup_stale, check=stale_removed),
            Case("a 250-byte --out, with a killed run's cut partial beside it", good + ["--out", p(long_name)], [],
                 exit_code=0, setup=setup_long_stale, check=long_out_written),
            Case("a 250-byte --out over an earlier output", good + ["--out", p(long_name), "--overwrite"], [],
                 exit_code=0, check=long_out_written),
            Case("old output moved aside by a killed run put back", good + ["--out", p("out_aside")],
                 ["--out", "out_aside", "already exists"], setup=setup_aside, check=aside_put_back),
            Case("a UTF-16 source file (Windows' \"Unicode\" text)", prep + ["--source", "s=" + p("utf16"), "--out", p("o_utf16")],
                 ["win.txt", "UTF-16LE", "UTF-8"], unchanged=[p("o_utf16")],
                 setup=lambda: write(p("utf16", "win.txt"), ("\ufeff" + PARAGRAPH.format(i="w")).encode("utf-16-le"), "wb")),
            # Its skip warning names --on-error, so the error is checked apart from the runner's one error line.
            Case("every file skipped under --on-error skip", ["data", "prepare", "--help"], [], exit_code=0,
                 check=lambda: all_files_skipped(prep + ["--source", "s=" + p("gz"), "--out", p("o_all_skipped"), "--on-error", "skip"],
                                                 p("o_all_skipped"))),
            Case(".gz that is not gzip", prep + ["--source", "s=" + p("gz"), "--out", p("o13")],
                 ["plain.txt.gz", "not gzip"], unchanged=[p("o13")]),
            Case("source weight not a number", prep + ["--source", "s=" + p("srcgz") + ":abc", "--out", p("o14")],
                 ["--source", "weight 'abc'", "not a number"], unchanged=[p("o14")]),
            Case("source weight absurd", prep + ["--source", "s=" + p("srcgz") + ":1e9", "--out", p("o15")],
                 ["--source", "weight"], unchanged=[p("o15")]),
            Case("NaN threshold", good + ["--out", p("o16"), "--max-dup-line-frac", "nan"], ["--max-dup-line-frac"],
                 unchanged=[p("o16")]),
            Case("NaN n-gram threshold", good + ["--out", p("o17"), "--top-ngram-fracs", "2:nan"], ["--top-ngram-fracs"],
                 unchanged=[p("o17")]),
            Case("negative word count", good + ["--out", p("o18"), "--min-words", "-3"], ["--min-words"],
                 unchanged=[p("o18")]),
            Case("empty JSONL field", good + ["--out", p("o19"), "--jsonl-field", ""], ["--jsonl-field"],
                 unchanged=[p("o19")]),
            Case("--threads huge", good + ["--out", p("o20"), "--threads", "100000"], ["--threads"], unchanged=[p("o20")]),
            Case("--minhash-bands x --minhash-rows past int (65536 x 65536 wraps to 0)",
                 good + ["--out", p("o_mh"), "--minhash-bands", "65536", "--minhash-rows", "65536"],
                 ["--minhash-bands", "at most 1024", "65536 x 65536"], unchanged=[p("o_mh")], check=lambda: no_partial(p("o_mh"))),
            Case("--minhash-bands x --minhash-rows negative as an int",
                 good + ["--out", p("o_mh2"), "--minhash-bands", "2147483647", "--minhash-rows", "2"],
                 ["--minhash-bands", "at most 1024"], unchanged=[p("o_mh2")], check=lambda: no_partial(p("o_mh2"))),
            Case("a source file name that is not UTF-8", prep + ["--source", "s=" + p("latin1_src"), "--out", p("o_latin1")],
                 ["--source s", "caf\\xe9.txt", "not valid UTF-8"], unchanged=[p("o_latin1"), p("latin1_src")],
                 check=lambda: no_partial(p("o_latin1"))),
            Case("--seed negative", good + ["--out", p("o_seed_neg"), "--seed", "-1"], ["--seed", "-1"],
                 unchanged=[p("o_seed_neg")]),
            Case("--seed above 2^64-1", good + ["--out", p("o_seed_big"), "--seed", "99999999999999999999"],
                 ["--seed", "18446744073709551615"], unchanged=[p("o_seed_big")]),
            Case("--seed 2^64-1 recorded exactly, and reproduced",
                 seeded + ["--out", p("o_seed_max"), "--seed", str(max_seed), "--jsonl-field", "123"],
                 [], exit_code=0, check=seed_round_trip),
            Case("misspelt subcommand", ["data", "prepar"], ["unknown subcommand 'prepar'", "prepare"]),
            Case("JSONL text with invalid UTF-8, --invalid-utf8 repair",
                 prep + ["--source", "s=" + p("inv"), "--out", p("o_inv")] + no_filters, [], exit_code=0,
                 check=lambda: ingest_stage(p("o_inv"), 1, {})),
            Case("JSONL text with invalid UTF-8, --invalid-utf8 drop",
                 prep + ["--source", "s=" + p("inv"), "--out", p("o_inv_drop"), "--invalid-utf8", "drop"] + no_filters, [],
                 exit_code=0, check=lambda: ingest_stage(p("o_inv_drop"), 0, {"invalid_utf8": 1})),
            Case("--decontaminate an empty directory", good + ["--out", p("o_dc1"), "--decontaminate", p("eval_empty_dir")],
                 ["--decontaminate", "eval_empty_dir", "no files"], unchanged=[p("o_dc1")],
                 setup=lambda: os.makedirs(p("eval_empty_dir"), exist_ok=True)),
            Case("--decontaminate an empty file", good + ["--out", p("o_dc2"), "--decontaminate", p("eval_empty.txt")],
                 ["--decontaminate", "no passage"], unchanged=[p("o_dc2")], setup=lambda: write(p("eval_empty.txt"), "")),
            # Evaluation files are read whole: the broken-line error may not point to --on-error skip.
            Case("--decontaminate a JSONL line without a string, --on-error skip",
                 good + ["--out", p("o_dc4"), "--on-error", "skip", "--decontaminate", p("eval_nostr.jsonl")],
                 ["eval_nostr.jsonl:2", "no string", "--on-error does not apply"], unchanged=[p("o_dc4")],
                 setup=lambda: write(p("eval_nostr.jsonl"), json.dumps({"q": PARAGRAPH.format(i=0)}) + '\n{"label": 1}\n')),
            Case("--decontaminate a path that does not exist",
                 good + ["--out", p("o_dc3"), "--decontaminate", p("no_such_eval")],
                 ["--decontaminate", "no_such_eval", "no files match"], unchanged=[p("o_dc3")]),
            Case("shard data given as a directory", ev + [p("old")], ["old", "is a directory", "manifest.json"]),
            Case("manifest shard changed after writing", ev + [p("tampered", "manifest.json")],
                 ["train_000000.bin", "content hash"]),
            Case("manifest path leaving its directory", ev + [p("escaping", "manifest.json")],
                 ["manifest.json", "leaves the manifest's directory"]),
            Case("eval --tokenizer that did not make the shards", ev + [p("old", "manifest.json"), "--tokenizer", other_tok],
                 ["manifest.json", "was made with tokenizer", "other_tok.bin"]),
            Case("train --tokenizer that did not make the --val-data (train shards without a manifest)",
                 tr + ["--tokenizer", other_tok, "--val-data", p("old", "manifest.json")],
                 ["manifest.json", "was made with tokenizer", "other_tok.bin"], unchanged=[p("r_other")]),
        ]
        # A signal as each rename of a run over an earlier output returns (tests/util/rename_signal.py).
        if rename_signal.STRACE:
            sig_cmd = [SIXND] + good + ["--shard-tokens", "1000", "--overwrite", "--out", p("sig", "out")]
            r = subprocess.run(sig_cmd[:-1] + [p("sig_new")], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
            cases.append(Case("signals between the renames of a run over an earlier output", ["data", "prepare", "--help"],
                              [], exit_code=0, check=lambda: rename_signal.dir_commit_fault(
                                  sig_cmd, p("sig", "out"), p("old"), p("sig_new"), ".old-", snapshot)))
        else:
            print("skip:", rename_signal.SKIP_NOTE)
        if dev:
            cases.insert(0, Case("--out a character device, --overwrite", good + ["--out", dev, "--overwrite"],
                                 ["--out", "null", "character device"], unchanged=[dev]))
        failures = []

        # SIGTERM mid-run: the partial directory goes with the process. Sent the moment the
        # directory appears, several times over: that is when a run that creates it before
        # arming its cleanup would leave it behind (about one kill in ten, before the fix).
        big = p("big")
        for i in range(400):
            write(os.path.join(big, f"d{i}.txt"), "".join(PARAGRAPH.format(i=f"{i}_{k}") for k in range(60)))
        for trial in range(20):
            proc = subprocess.Popen([SIXND] + prep + ["--source", "s=" + big, "--out", p("out_killed")],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            partial = p("out_killed.partial-%d" % proc.pid)
            deadline = time.time() + 60
            while not os.path.exists(partial) and proc.poll() is None and time.time() < deadline:
                pass
            seen = os.path.exists(partial)
            proc.send_signal(signal.SIGTERM)
            proc.wait()
            if not seen:
                failures.append(f"SIGTERM (kill {trial}): the run ended before its partial directory appeared")
            elif proc.returncode != -signal.SIGTERM:
                failures.append(f"SIGTERM (kill {trial}): exit {proc.returncode}, expected death by SIGTERM")
            elif os.path.exists(partial):
                failures.append(f"SIGTERM (kill {trial}): {partial} left behind: {os.listdir(partial)}")
            if failures:
                break
        # Reported through the runner (its command only prints help) so the suite has one closing line.
        cases.append(Case("SIGTERM mid-run removes the partial directory", ["data", "prepare", "--help"], [], exit_code=0,
                          check=lambda: failures[0] if failures else None))
        return run_cases(cases, "data bad input" + ("" if dev else " (device-node cases need root: left out)"))


if __name__ == "__main__":
    sys.exit(main())
