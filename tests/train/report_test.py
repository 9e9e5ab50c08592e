"""`sixnd report` renders from a real training run and from an ablation: every plot exists, is a
whole PNG that decodes, is 1000 x 550 pixels and shows something; report.md lists every variant
(or the run) with its numbers and the configuration; report.html embeds every plot (base64).
Report writes only into a new or empty directory or an earlier report (which a rerun replaces),
never over a user's files, and a failed report leaves the earlier one as it was; one the disk
cannot take (a plot over RLIMIT_FSIZE) says so in one line naming the file. A run log's torn
last line is skipped with a warning, a line that is not JSON anywhere else is refused by
FILE:LINE, and an ablation that has not finished is refused saying how many runs are done. Two
ablations in one report have their variants named apart (by each ablation's path)."""
import base64
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("SIXND_SOURCE", "."), "tests", "util"))
import bad_input  # noqa: E402
import png  # noqa: E402
import sixnd_files  # noqa: E402
import tiny_text  # noqa: E402

PLOTS = ["loss.png", "lr.png", "grad_norm.png", "throughput.png", "memory.png", "comm.png"]


def check_report(out, names, failures, what, sent_bytes=False):
    for name in PLOTS:
        path = os.path.join(out, name)
        try:
            w, h, ch, rows = png.read(path)
        except (OSError, ValueError) as e:
            failures.append(f"{what}: {name}: {e}")
            continue
        frac = png.colored_fraction(rows, ch)
        if (w, h) != (1000, 550):
            failures.append(f"{what}: {name} is {w}x{h}, expected 1000x550")
        if frac < 0.002 and (name != "comm.png" or sent_bytes):
            failures.append(f"{what}: {name} shows nothing in colour ({frac:.4%})")
    md = open(os.path.join(out, "report.md")).read()
    for n in names:
        if not re.search(r"^\| " + re.escape(n) + r" \|", md, re.M):
            failures.append(f"{what}: report.md has no table row for {n}")
    for name in PLOTS:
        if f"]({name})" not in md:
            failures.append(f"{what}: report.md does not show {name}")
    if "## Configuration" not in md or '"lr"' not in md:
        failures.append(f"{what}: report.md lacks the configuration")
    html = open(os.path.join(out, "report.html")).read()
    imgs = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", html)
    if len(imgs) != len(PLOTS) or any(not base64.b64decode(i).startswith(b"\x89PNG") for i in imgs):
        failures.append(f"{what}: report.html embeds {len(imgs)} PNG images, expected {len(PLOTS)}")
    if "src='" + "loss.png" in html or "<table>" not in html:
        failures.append(f"{what}: report.html is not self-contained or has no table")
    print(f"{what}: {len(PLOTS)} plots of 1000x550, report.md ({len(md)} bytes), report.html ({len(html)} bytes)")


def out_dir_cases(tmp, log, out1, failures):
    """--out: a directory report did not write is refused whole, an earlier report is replaced
    (unless something was added to it), and a report that fails while drawing changes nothing:
    a file the drawing cannot write (every plot is over 20 kB) is the one error line, no traceback."""
    notes, pngs, data = (os.path.join(tmp, d) for d in ("notes", "pngs", "data"))
    for d, name, text in ((notes, "report.md", "my notes\n"), (pngs, "loss.png", "my plot\n"),
                          (data, "manifest.json", "{}\n")):
        os.makedirs(d)
        open(os.path.join(d, name), "w").write(text)
    linked = os.path.join(tmp, "linked")
    os.symlink(notes, linked)
    fake_python = os.path.join(tmp, "failing_python")
    # Passes the matplotlib probe, then scribbles on the directory it is given and fails.
    open(fake_python, "w").write('#!/bin/sh\n[ "$1" = -c ] && exit 0\necho junk > "$3/loss.png"\n'
                                 'echo junk > "$3/report.md"\nexit 1\n')
    os.chmod(fake_python, 0o755)

    def no_staging_left():
        left = glob.glob(os.path.join(tmp, ".*report-*"))
        return f"left behind: {left}" if left else None

    added = os.path.join(tmp, "added")
    cases = [bad_input.Case("user_report_md", ["report", log, "--out", notes], [notes, "report.md", "not an earlier report"],
                            unchanged=[notes]),
             bad_input.Case("user_loss_png", ["report", log, "--out", pngs], [pngs, "loss.png"], unchanged=[pngs]),
             bad_input.Case("data_directory", ["report", log, "--out", data], [data, "manifest.json"], unchanged=[data]),
             bad_input.Case("a_run_log_file", ["report", log, "--out", log],
                            [log, "a regular file, not a directory sixnd report wrote"], unchanged=[log]),
             # Named as the link it is (it read "exists and is not a directory").
             bad_input.Case("a_link_to_a_directory", ["report", log, "--out", linked],
                            [linked, "a symbolic link, not a directory sixnd report wrote"], unchanged=[linked, notes]),
             bad_input.Case("file_added_to_a_report", ["report", log, "--out", added], [added, "my.txt", "no report writes"],
                            unchanged=[added], check=no_staging_left,
                            setup=lambda: open(os.path.join(added, "my.txt"), "w").write("mine\n")),
             bad_input.Case("failed_drawing", ["report", log, "--out", out1], ["report_plots.py", "status 1"],
                            unchanged=[out1], check=no_staging_left, env={"SIXND_PYTHON": fake_python}),
             bad_input.Case("plot_too_large", ["report", log, "--out", out1],
                            [os.path.join(out1, "loss.png") + ": File too large"], unchanged=[out1],
                            check=no_staging_left, file_size_limit=20000),
             # Named as this --out, not as the library's "filesystem error: symlink_status".
             bad_input.Case("a_name_too_long", ["report", log, "--out", os.path.join(tmp, "n" * 300, "r")],
                            ["cannot be looked at: File name too long"])]
    tiny_text.sixnd("report", log, "--out", added)
    if bad_input.run_cases(cases, "sixnd report --out") != 0:
        failures.append("--out cases failed")
    # Rerunning into its own earlier output replaces it.
    r = tiny_text.sixnd("report", log, "--out", out1, check=False)
    if r.returncode != 0:
        failures.append(f"report into its own earlier output: {r.stderr.strip()[-400:]}")
    else:
        check_report(out1, ["single"], failures, "rerun into the earlier report")


def bad_source_cases(tmp, log, abl, tokenizer):
    """Inputs that are not run logs or ablations, or records of the wrong shape: one error naming
    the file (FILE:LINE and the field for a record) and no report written."""
    bad = os.path.join(tmp, "bad_sources")
    os.makedirs(bad)
    header = open(log).readline()

    def write(name, text):
        path = os.path.join(bad, name)
        open(path, "w").write(text)
        return path

    step = '{"type":"step","step":1,"loss":1.5,"tokens":64'
    step2 = '{"type":"step","step":2,"loss":1.4,"tokens":64}\n'
    # A run's ablation that has not finished: results.json comes after the last run.
    unfinished = os.path.join(bad, "abl_unfinished")
    shutil.copytree(abl, unfinished)
    os.remove(os.path.join(unfinished, "results.json"))
    for done in sorted(glob.glob(os.path.join(unfinished, "runs", "*", "seed-*", "DONE")))[:2]:
        os.remove(done)
    runs = len(glob.glob(os.path.join(unfinished, "runs", "*", "seed-*")))
    broken_abl = os.path.join(bad, "abl_array")
    shutil.copytree(abl, broken_abl)
    write(os.path.join("abl_array", "results.json"), "[1, 2]\n")
    no_variants = os.path.join(bad, "abl_no_variants")
    shutil.copytree(abl, no_variants)
    results = json.load(open(os.path.join(abl, "results.json")))
    results["variants"] = []
    write(os.path.join("abl_no_variants", "results.json"), json.dumps(results))
    edited_abl = os.path.join(bad, "abl_edited")
    shutil.copytree(abl, edited_abl)
    run_log = glob.glob(os.path.join(edited_abl, "runs", "*", "seed-*", "run.jsonl"))[0]
    open(run_log, "a").write('{"type":"step","step":99,"loss":"a","tokens":1}\n')
    sources = [
        ("tokenizer_file", tokenizer, [tokenizer, "not a sixnd run log"]),
        ("results_json_as_log", os.path.join(abl, "results.json"), ["results.json", "not a sixnd run log"]),
        ("step_before_header", write("w.jsonl", '{"type":"step","step":"x","loss":"a"}\n'),
         ["w.jsonl", "not a sixnd run log (no header record)"]),
        ("array_record", write("arr.jsonl", "[1,2]\n"), ["arr.jsonl", "not a sixnd run log"]),
        ("step_not_a_number", write("hw.jsonl", header + '{"type":"step","step":"x","loss":"a"}\n'),
         ["hw.jsonl:2", "step", '"x"']),
        ("loss_a_string", write("hl.jsonl", header + '{"type":"step","step":1,"loss":"a","tokens":64}\n'),
         ["hl.jsonl:2", "loss", '"a"']),
        ("memory_not_an_object", write("hm.jsonl", header + step + ',"memory":[1]}\n'), ["hm.jsonl:2", "memory"]),
        ("no_tokens", write("ht.jsonl", header + '{"type":"step","step":1,"loss":1.5}\n'), ["ht.jsonl:2", "tokens"]),
        ("event_step_a_list", write("he.jsonl", header + step + '}\n{"type":"event","event":"spike","step":[1]}\n'),
         ["he.jsonl:3", "step"]),
        ("eval_event_loss_a_string", write("hv.jsonl", header + step + '}\n{"type":"event","event":"eval","step":1,"val_loss":"low"}\n'),
         ["hv.jsonl:3", "val_loss", '"low"']),
        ("header_config_not_object", write("hc.jsonl", '{"type":"header","config":7}\n' + step + '}\n'),
         ["hc.jsonl:1", "config"]),
        ("results_json_an_array", broken_abl, ["results.json", "not an ablation directory"]),
        ("results_json_without_variants", no_variants, ["results.json", "no variants"]),
        ("ablation_run_log_edited", edited_abl, [run_log, "loss"]),
        # Only the last line can be a write torn by a kill: a resume cuts it off before appending.
        ("torn_line_not_last", write("mid.jsonl", header + step + '}\n{"type":"step","st\n' + step2),
         ["mid.jsonl:3", "not a JSON record", "not the last line"]),
        ("empty_input", "", ["inputs", "empty"]),
        ("unfinished_ablation", unfinished, [unfinished, "ablation not finished", f"{runs - 2} of {runs} runs done",
                                             "rerun the sixnd ablate command"]),
    ]
    cases = []
    for name, src, words in sources:
        out = os.path.join(bad, "out_" + name)
        cases.append(bad_input.Case(name, ["report", src, "--out", out], words, unchanged=[out]))
    return cases


def table_row(md, name):
    """The cells of report.md's table row whose first cell is `name` as written there."""
    for line in md.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if cells and cells[0] == name:
            return cells
    return None


def diverged_and_odd_names(tmp, p, failures):
    """A run that ended on non-finite steps shows no final train or validation loss (not the last
    finite one's), and a run whose name holds Markdown and HTML characters keeps its table row's
    columns, escaped."""
    odd = os.path.join(tmp, "a|b <i>&")
    tiny_text.sixnd("train", *tiny_text.train_flags(p, steps=8), "--inject-lr-spike", "5:1e30:4", "--max-bad-steps", "10",
                    "--out", odd, "--log", os.path.join(odd, "run.jsonl"))
    out = os.path.join(tmp, "report_diverged")
    tiny_text.sixnd("report", odd, "--out", out)
    md = open(os.path.join(out, "report.md")).read()
    head = table_row(md, "variant / run")
    row = table_row(md, "a\\|b &lt;i&gt;&amp;")
    if row is None or len(row) != len(head):
        failures.append(f"a run named 'a|b <i>&': no table row of {len(head)} cells, escaped: {row}")
    elif row[head.index("train loss")] != "-" or row[head.index("val loss")] != "-":
        failures.append(f"a run that ended diverged shows train loss {row[head.index('train loss')]}, "
                        f"val loss {row[head.index('val loss')]}: expected '-' for both")


def main():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        p = tiny_text.make(tmp)
        log = os.path.join(tmp, "single.jsonl")
        train = [tiny_text.SIXND, "train", *tiny_text.train_flags(p, steps=8), "--log", log, "--out",
                 os.path.join(tmp, "run")]
        # Under mpirun (ZeRO-2, 2 ranks) the bytes-per-rank plot has something to show.
        mpirun = shutil.which("mpirun")
        if mpirun:
            train = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", *train, "--zero", "2"]
        else:
            print("mpirun not found: the single run is one process and its bytes-sent plot stays empty")
        r = subprocess.run(train, capture_output=True, text=True, env=tiny_text.ENV)
        if r.returncode != 0:
            return sixnd_files.report([f"training failed: {r.stderr[-600:]}"], "sixnd report")
        out1 = os.path.join(tmp, "report_run")
        r = tiny_text.sixnd("report", log, "--out", out1)
        print(r.stdout.strip())
        check_report(out1, ["single"], failures, "single run", sent_bytes=bool(mpirun))

        abl = os.path.join(tmp, "abl")
        tiny_text.sixnd("ablate", "--out", abl, "--vary", "lr=2e-3,8e-3", "--vary", "recompute=none,full", "--seeds", "2",
                        *tiny_text.train_flags(p, steps=6))
        out2 = os.path.join(tmp, "report_abl")
        tiny_text.sixnd("report", abl, "--out", out2)
        variants = [v["name"] for v in json.load(open(os.path.join(abl, "results.json")))["variants"]]
        check_report(out2, variants, failures, "ablation")
        md = open(os.path.join(out2, "report.md")).read()
        if " ± " not in md or "true" not in md:
            failures.append("ablation report: no mean ± std or no loss_equal in the table")

        # The time column is the sum of step times, labelled as such (train/run_metrics.h).
        if "| time in steps s |" not in md or "step time s" in md:
            failures.append("ablation report: the time column is not labelled 'time in steps s'")
        torn = os.path.join(tmp, "torn.jsonl")
        open(torn, "w").write(open(log).read() + '{"type":"step","step":9,"lo')
        r = tiny_text.sixnd("report", torn, "--out", os.path.join(tmp, "report_torn"), check=False)
        warns = [x for x in r.stderr.splitlines() if "torn" in x]
        lines = len(open(torn).read().split("\n"))
        if r.returncode != 0 or len(warns) != 1 or f"{torn}:{lines}" not in warns[0]:
            failures.append(f"a torn last line: exit {r.returncode}, expected one warning naming {torn}:{lines}: "
                            f"{r.stderr.strip()[-400:]}")

        diverged_and_odd_names(tmp, p, failures)
        out3 = os.path.join(tmp, "report_both")
        tiny_text.sixnd("report", abl, log, "--out", out3)
        check_report(out3, variants + ["single"], failures, "ablation and run together")

        # Two ablations share their variants' names (base, ...): each row and legend is prefixed
        # by its ablation's path, where they used to be two rows of one name with other numbers.
        abl2 = os.path.join(tmp, "abl2")
        shutil.copytree(abl, abl2)
        out5 = os.path.join(tmp, "report_two")
        tiny_text.sixnd("report", abl, abl2, "--out", out5)
        md5 = open(os.path.join(out5, "report.md")).read()
        rows = [line.split("|")[1].strip() for line in md5.splitlines() if line.startswith("| ")]
        for a in (abl, abl2):
            for v in variants:
                if rows.count(f"{a}: {v}") != 1:
                    failures.append(f"two ablations: no single row '{a}: {v}' in report.md (rows {rows})")
        if f"{abl}: " in md:
            failures.append("an ablation reported alone: its variants' names are prefixed")

        r = tiny_text.sixnd("report", os.path.join(tmp, "nothing"), "--out", os.path.join(tmp, "r4"), check=False)
        errs = [x for x in r.stderr.splitlines() if "error" in x]
        if r.returncode != 1 or len(errs) != 1 or "nothing" not in errs[0]:
            failures.append(f"a missing input: exit {r.returncode}, stderr {r.stderr.strip()}")
        if bad_input.run_cases(bad_source_cases(tmp, log, abl, p["tokenizer"]), "sixnd report inputs") != 0:
            failures.append("bad input cases failed")
        out_dir_cases(tmp, log, out1, failures)
    return sixnd_files.report(failures, "sixnd report from a run and from an ablation")


if __name__ == "__main__":
    sys.exit(main())
