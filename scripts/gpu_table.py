#!/usr/bin/env python3
"""The end of scripts/gpu_check.sh: reads its logs in OUT and prints the verdict, then one table
(also written to OUT/summary.md): each check's result, and each measured number with PyTorch's
beside it on the same card, their ratio, and MFU for both (achieved FLOP/s over the dense bf16
peak sixnd's device table gives). Exit status: 0 when every check passed or there is no device,
1 otherwise. Standard library only: runs with any python3, with or without PyTorch.

While the run goes on, gpu_check.sh calls it with --progress STEP around every step: it then
writes summary.md marked INCOMPLETE (what a call cut short brings back) and prints only STEP's
key numbers, a few short lines (the device tool returns only the output's tail).

Files read (all optional): steps.tsv (name, status, seconds, limit per step; the last line of a
name counts), probe.log, the gpu test binaries' output (<binary>.log), memcheck.log,
racecheck.log, attention_sixnd.md and attention_torch.md (bench/attention's table),
gpt2_sixnd_<policy>.log and gpt2_torch.log (JSON lines of model_bench and bench/torch_gpt2.py)."""
import argparse
import datetime
import json
import os
import re
import sys

TESTS = ["gpu_ops_test", "gpu_attention_test", "gpu_train_test", "gpu_muon_test", "gpu_nccl_test"]
POLICIES = ["none", "selective", "full"]
ATTENTION = ["attention_sixnd", "attention_torch"]
GPT2 = [f"gpt2_sixnd_{p}" for p in POLICIES] + ["gpt2_torch"]
# PyTorch's side of a comparison. Its timeout (a cold torch.compile of GPT-2 can take minutes)
# loses that comparison, not a sixnd check: a note, not a failure.
PEERS = {"attention_torch", "gpt2_torch"}
NOT_SELECTED = "not selected"  # left out by SIXND_GPU_STEPS
PENDING = "pending"            # not reached yet (only while the run goes on)
RUNNING = "running"            # started, not finished when the summary was written


def read(out, name):
    try:
        with open(os.path.join(out, name), errors="replace") as f:
            return f.read()
    except OSError:
        return None


def read_steps(out):
    steps = {}
    for line in (read(out, "steps.tsv") or "").splitlines():
        parts = line.split("\t")
        if len(parts) == 4:
            steps[parts[0]] = {"status": parts[1], "seconds": parts[2], "limit": parts[3]}
    return steps


def read_probe(out):
    """probe.log's "key: value" lines: os, glibc, gpu (nvidia-smi's name, driver, memory, clock),
    cublaslt, nccl, ldd (a binary's load check), racecheck kernels."""
    info = {}
    for line in (read(out, "probe.log") or "").splitlines():
        m = re.match(r"(os|glibc|gpu|cublaslt|nccl|ldd|racecheck kernels): (.*)$", line)
        if m and m.group(1) not in info:
            info[m.group(1)] = m.group(2).strip()
    return info


def telling_line(text, limit=200):
    """The line that says why a program did not start or stopped (a loader error, a bad option):
    the first that names an error, else the first non-blank one."""
    lines = [line.strip().lstrip("=").strip() for line in (text or "").splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return "no output"
    pick = next((line for line in lines
                 if re.search(r"error|not found|cannot|unrecognized|invalid|terminate", line, re.I)), lines[0])
    return pick if len(pick) <= limit else pick[:limit - 1] + "…"


def gtest_counts(text):
    """passed/failed/skipped case names from GoogleTest's output; `crashed` is a case that started
    and never finished (the binary died or was stopped inside it); `started` is whether GoogleTest
    ran at all (a binary the loader refuses prints only the loader's complaint)."""
    res = {"OK": [], "FAILED": [], "SKIPPED": []}
    running = None
    for line in text.splitlines():
        m = re.match(r"\[ RUN      \] (\S+)", line)
        if m:
            running = m.group(1)
            continue
        # "[  FAILED  ] Suite.Name, where GetParam() = ... (12 ms)": the comment only on failures
        m = re.match(r"\[\s+(OK|FAILED|SKIPPED)\s+\] ([^\s,]+).* \(\d+ ms\)$", line)
        if m:
            res[m.group(1)].append(m.group(2))
            running = None
    return {"passed": res["OK"], "failed": res["FAILED"], "skipped": res["SKIPPED"], "crashed": running,
            "started": "[==========]" in text}


def attention_rows(text):
    """{(impl, hs, T): {"fwd": TFLOP/s or None, "fwdbwd": TFLOP/s}} from bench/attention's table."""
    rows = {}
    for line in (text or "").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 9 or not cells[1].isdecimal() or not cells[2].isdecimal():
            continue
        impl = ("sixnd atomic" if "atomic" in cells[0] else "sixnd") if cells[0].startswith("sixnd") else "torch"

        def num(c):
            try:
                return float(c)
            except ValueError:
                return None
        rows[(impl, int(cells[1]), int(cells[2]))] = {"fwd": num(cells[6]), "fwdbwd": num(cells[8])}
    return rows


def number(x):
    """x when it is a JSON number, else None: a garbled value is a gap in the table, not a crash
    that loses the whole summary."""
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def json_lines(text):
    out = []
    for line in (text or "").splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def fmt(x, digits=1):
    return "–" if x is None else f"{x:,.{digits}f}"


def pct(x):
    return "–" if x is None else f"{100 * x:.1f}%"


def ratio(a, b):
    return "–" if a is None or not b else f"{a / b:.2f}×"


def attention_brief(rows):
    """One short line per implementation and head size: TFLOP/s over the T values."""
    lines = []
    for impl, hs in sorted({(i, h) for (i, h, _) in rows}):
        ts = sorted(T for (i, h, T) in rows if (i, h) == (impl, hs))
        parts = []
        for what, label in (("fwd", "fwd"), ("fwdbwd", "fwd+bwd")):
            vals = [rows[(impl, hs, T)][what] for T in ts]
            if any(v is not None for v in vals):
                parts.append(f"{label} " + "/".join(fmt(v) for v in vals))
        lines.append(f"{impl} hs {hs}, T {'/'.join(str(T) for T in ts)}: {', '.join(parts)} TFLOP/s")
    return lines or ["no numbers"]


def build(args):
    """(text, failed, brief): the summary, whether a check failed, and each step's key lines."""
    out = args.out
    steps = read_steps(out)
    probe = read_probe(out)
    device = not args.no_device
    problems, notes, failing = [], [], []
    brief = {}
    rows = []

    def status(name):
        if name in steps:
            return steps[name]["status"]
        return PENDING if args.progress else "not run"

    def idle(st):
        """No result to judge: not selected, not reached yet, or still running."""
        return st in (NOT_SELECTED, PENDING, RUNNING)

    def limit(name):
        return steps.get(name, {}).get("limit", "?")

    def did_not_start(name, st, text, has_output):
        """A step that failed with none of its output: its log's telling line, in the summary."""
        if st.startswith("failed") and not has_output:
            failing.append(f"{name}: {telling_line(text)}")

    # --- the probe
    driver = None
    if probe.get("gpu"):
        fields = [f.strip() for f in probe["gpu"].split(",")]
        driver = fields[1] if len(fields) > 1 else None
    glibc = re.search(r"(\d+\.\d+)\s*$", probe.get("glibc", ""))
    machine = "; ".join(part for part in (probe.get("os"), f"glibc {glibc.group(1)}" if glibc else probe.get("glibc"),
                                          f"cuBLASLt {probe['cublaslt']}" if probe.get("cublaslt") else None) if part)
    loader = probe.get("ldd", "") if "not found" in probe.get("ldd", "") else ""
    if loader:
        notes.append(f"the loader: {loader}")
    brief["probe"] = [line for line in (f"gpu: {probe['gpu']}" if probe.get("gpu") else "",
                                        f"machine: {machine}" if machine else "",
                                        f"the loader: {loader}" if loader else "") if line]

    # --- the test binaries
    for t in TESTS:
        st = status(t)
        text = read(out, f"{t}.log") or ""
        c = gtest_counts(text)
        n = len(c["passed"]) + len(c["failed"]) + len(c["skipped"])
        mine = len(failing)
        if idle(st):
            cell = st
        elif st.startswith("skipped"):
            cell = st
            if device:
                problems.append(f"{t}: {st}")
        else:
            # Without a device the binaries must still start, and skip every case with exit 0.
            cell = f"{len(c['passed'])} passed, {len(c['failed'])} failed, {len(c['skipped'])} skipped"
            failing += [f"{t}: {name}" for name in c["failed"]]
            if c["crashed"]:
                failing.append(f"{t}: {c['crashed']} (did not finish: {st})")
                cell += f"; stopped in {c['crashed']}"
            if n == 0 and not c["started"] and st != "timeout":
                why = telling_line(text)
                failing.append(f"{t}: did not start: {why}")
                cell = f"did not start: {why}"
            if st != "ok":
                cell = f"{st.upper()}: {cell}"
                problems.append(f"{t}: {st}")
            elif c["failed"]:
                problems.append(f"{t}: {len(c['failed'])} failed")
            elif n == 0:
                problems.append(f"{t}: no test case ran")
            elif device and len(c["skipped"]) == n:
                problems.append(f"{t}: every case skipped on a machine with a device")
                cell = "ALL SKIPPED: " + cell
        brief[t] = [f"{t}: {cell}"] + [f"failing: {f}" for f in failing[mine:] if "did not start" not in f][:5]
        # gpu_nccl_test's verdict per ZeRO stage ("nccl zero N: ... PASS") and of its reference run.
        brief[t] += re.findall(r"^(nccl (?:zero \d|reference): .*)$", text, re.M)
        rows.append([f"{t} (cases)", cell, "", "", "", ""])

    # --- compute-sanitizer
    for s in ("memcheck", "racecheck"):
        st = status(s)
        text = read(out, f"{s}.log") or ""
        m = re.search(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) error", text) or \
            re.search(r"ERROR SUMMARY: (\d+) error", text)
        label = f"compute-sanitizer {s}, attention"
        if s == "racecheck" and probe.get("racecheck kernels"):
            label += f" (kernels: {probe['racecheck kernels'].split(' (')[0]})"
        if idle(st) or st.startswith("skipped"):
            cell = st
        elif re.search(r"[Dd]evice not supported|not supported on this (device|platform)", text):
            cell = "unavailable: the sanitizer does not support this device (see log)"
            notes.append(f"{s}: compute-sanitizer cannot run on this machine")
        else:
            errors = int(m.group(1)) if m else None
            # No summary: the sanitizer or the binary did not get going; its log says why.
            cell = f"{errors} errors" if errors is not None else f"no summary: {telling_line(text)}"
            if st != "ok" or errors != 0:
                cell = f"{st.upper()}: {cell}" if st != "ok" else f"FAILED: {cell}"
                problems.append(f"{s}: {st}, {cell}")
        brief[s] = [f"{s}: {cell}"]
        rows.append([label, cell, "", "", "", ""])

    # --- the peak MFU is measured against: sixnd's device table (model_bench, else attention_bench)
    sixnd_gpt = {p: (json_lines(read(out, f"gpt2_sixnd_{p}.log")) or [None])[-1] for p in POLICIES}
    peak = None
    for j in sixnd_gpt.values():
        if j and number(j.get("peak_tflops")):
            peak = number(j["peak_tflops"])
            break
    att_s_text = read(out, "attention_sixnd.md")
    if peak is None and att_s_text:
        m = re.search(r"peak bf16 dense: ([0-9]+(?:\.[0-9]+)?) TFLOP/s", att_s_text)
        peak = float(m.group(1)) if m else None

    def mfu_tflops(x):
        return None if x is None or not peak else x / peak

    logs = {"attention_sixnd": "attention_sixnd.md", "attention_torch": "attention_torch.md",
            "gpt2_torch": "gpt2_torch.log", **{f"gpt2_sixnd_{p}": f"gpt2_sixnd_{p}.log" for p in POLICIES}}

    def judge(name, has_output):
        """A benchmark step's status, on a machine with a device: a problem unless ok; a
        PyTorch peer's timeout is only a note."""
        st = status(name)
        if not device or idle(st) or st == "ok":
            return
        if st == "timeout" and name in PEERS:
            notes.append(f"{name}: timed out at {limit(name)} s; PyTorch's numbers are missing or partial "
                         "(not a sixnd failure)")
        else:
            problems.append(f"{name}: {st}")
            did_not_start(name, st, read(out, logs[name]), has_output)

    # --- attention
    att_s, att_t = attention_rows(att_s_text), attention_rows(read(out, "attention_torch.md"))
    judge("attention_sixnd", bool(att_s))
    judge("attention_torch", bool(att_t))
    brief["attention_sixnd"] = attention_brief(att_s)
    brief["attention_torch"] = attention_brief(att_t)
    # With a device every expected shape gets a row, so a missing number shows as a gap.
    chosen = any(status(n) != NOT_SELECTED for n in ATTENTION)
    expected = {(hs, T) for hs in (64, 128) for T in args.seq_lens} if device and chosen else set()
    keys = sorted(expected | {(hs, T) for (_, hs, T) in list(att_s) + list(att_t)})
    for hs, T in keys:
        t = att_t.get(("torch", hs, T), {})
        for impl, what, label in (("sixnd", "fwd", "fwd"), ("sixnd", "fwdbwd", "fwd+bwd"),
                                  ("sixnd atomic", "fwdbwd", "fwd+bwd, atomic dQ")):
            s = att_s.get((impl, hs, T), {}).get(what)
            tv = t.get(what)
            rows.append([f"attention {label}, hs {hs}, T {T} (TFLOP/s)", fmt(s), fmt(tv), ratio(s, tv),
                         pct(mfu_tflops(s)), pct(mfu_tflops(tv))])

    # --- GPT-2 124M training
    torch_lines = {j["variant"]: j for j in json_lines(read(out, "gpt2_torch.log"))
                   if isinstance(j.get("variant"), str)}
    judge("gpt2_torch", bool(torch_lines))
    brief["gpt2_torch"] = ["gpt2_torch: " + ", ".join(
        f"{v} {fmt(number(torch_lines[v].get('tokens_per_s')), 0)} tok/s" for v in ("eager", "compile")
        if v in torch_lines) if torch_lines else "gpt2_torch: no numbers"]
    gpt2_chosen = any(status(n) != NOT_SELECTED for n in GPT2)
    for p in POLICIES:
        s = sixnd_gpt[p]
        judge(f"gpt2_sixnd_{p}", s is not None)
        s_tps = number(s.get("tokens_per_s")) if s else None
        s_mfu = number(s.get("mfu")) if s else None
        brief[f"gpt2_sixnd_{p}"] = [f"gpt2_sixnd_{p}: {fmt(s_tps, 0)} tok/s, MFU {pct(s_mfu)}" if s
                                    else f"gpt2_sixnd_{p}: no numbers"]
        if not gpt2_chosen and s is None and not torch_lines:
            continue
        for variant, label in (("eager", "PyTorch eager"), ("compile", "torch.compile")):
            t = torch_lines.get(variant)
            t_tps = number(t.get("tokens_per_s")) if t else None
            t_mfu = number(t.get("mfu")) if t else None
            if t_mfu is None and t_tps and peak and number(t.get("flops_per_token")):
                t_mfu = number(t["flops_per_token"]) * t_tps / (peak * 1e12)
            rows.append([f"GPT-2 124M train, recompute {p} vs {label} (tok/s)", fmt(s_tps, 0), fmt(t_tps, 0),
                         ratio(s_tps, t_tps), pct(s_mfu), pct(t_mfu)])

    timeouts = [f"{n} ({v['limit']} s)" for n, v in steps.items() if v["status"] == "timeout"]
    subset = [n for n, v in steps.items() if v["status"] != NOT_SELECTED]
    some_only = len(subset) < len(steps)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    gpu = (args.gpu or "no GPU") + (f" (driver {driver})" if driver else "")
    lines = [f"# sixnd gpu_check, {date}, {gpu}; GPT-2 B={args.batch} T=1024 bf16; "
             f"peak {fmt(peak)} TFLOP/s (sixnd's table); {args.elapsed} s of a {args.budget} s budget"]
    if not device:
        # Say what the binaries did: without the staged folder none was found, and "started and
        # skipped" would claim a check that did not happen.
        ran = [t for t in TESTS if not idle(status(t)) and not status(t).startswith("skipped")]
        missing = [t for t in TESTS if status(t).startswith("skipped")]
        if ran and not missing:
            what = "test binaries started and skipped"
        elif ran:
            what = f"test binaries started and skipped; not run: {', '.join(missing)} ({status(missing[0])})"
        elif missing:
            what = f"no test binary ran: {status(missing[0])}"
        else:
            what = "no test binary selected"
        verdict = f"NO DEVICE: {args.no_device}; nothing ran on a GPU ({what})"
        if problems:
            verdict = "FAILED: " + "; ".join(problems) + f" (and no device: {args.no_device})"
    elif problems:
        verdict = "FAILED: " + "; ".join(problems)
    else:
        verdict = "PASSED: every selected check" if some_only else "PASSED: every check"
    if args.progress:
        running = [n for n, v in steps.items() if v["status"] == RUNNING]
        where = f"while {running[0]} ran" if running else f"after {args.progress}"
        verdict = f"INCOMPLETE: the call ended {where} (the run's own end replaces this summary). So far: {verdict}"
    lines.append(f"result: {verdict}")
    if some_only:
        lines.append(f"steps: {' '.join(subset)} (SIXND_GPU_STEPS; the others not selected)")
    if machine:
        lines.append(f"machine: {machine}")
    if timeouts:
        lines.append("timed out: " + ", ".join(timeouts))
    for f in failing:
        lines.append(f"failing: {f}")
    for n in notes:
        lines.append(f"note: {n}")
    lines.append("")
    lines.append("| check | sixnd | PyTorch | sixnd ÷ PyTorch | MFU sixnd | MFU PyTorch |")
    lines.append("|---|---|---|---|---|---|")
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines), bool(problems), brief


def main():
    ap = argparse.ArgumentParser(description="gpu_check's verdict and table")
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget", type=int, default=0)
    ap.add_argument("--elapsed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--gpu", default="")
    ap.add_argument("--seq-lens", default="1024,2048,4096", help="the attention benchmark's T values")
    ap.add_argument("--no-device", default="", help="why there is no device (empty: a device is present)")
    ap.add_argument("--progress", metavar="STEP", default="",
                    help="the run goes on and STEP just ended (or, with --quiet, is starting): write "
                         "summary.md marked INCOMPLETE and print only STEP's key numbers")
    ap.add_argument("--quiet", action="store_true", help="with --progress: print nothing")
    args = ap.parse_args()
    args.seq_lens = [int(t) for t in args.seq_lens.split(",")]
    text, failed, brief = build(args)
    tmp = os.path.join(args.out, "summary.md.tmp")
    with open(tmp, "w") as f:
        f.write(text + "\n")
    os.replace(tmp, os.path.join(args.out, "summary.md"))
    if args.progress:
        if not args.quiet:
            for line in brief.get(args.progress, []):
                print("   " + line)
        return 0
    print(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
