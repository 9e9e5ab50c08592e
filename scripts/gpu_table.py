#!/usr/bin/env python3
"""The end of scripts/gpu_check.sh: reads its logs in OUT and prints the verdict, then one table
(also written to OUT/summary.md): each check's result, and each measured number with PyTorch's
beside it on the same card, their ratio, and MFU for both (achieved FLOP/s over the dense bf16
peak sixnd's device table gives). Exit status: 0 when every check passed or there is no device,
1 otherwise. Standard library only: runs with any python3, with or without PyTorch.

Files read (all optional): steps.tsv (name, status, seconds, limit per step), probe.log, the gpu
test binaries' output (<binary>.log), memcheck.log, racecheck.log, attention_sixnd.md and
attention_torch.md (bench/attention's table), gpt2_sixnd_<policy>.log and gpt2_torch.log (JSON
lines of model_bench and bench/torch_gpt2.py)."""
import argparse
import datetime
import json
import os
import re
import sys

TESTS = ["gpu_ops_test", "gpu_attention_test", "gpu_train_test"]
POLICIES = ["none", "selective", "full"]


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


def gtest_counts(text):
    """passed/failed/skipped case names from GoogleTest's output; `crashed` is a case that started
    and never finished (the binary died or was stopped inside it)."""
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
    return {"passed": res["OK"], "failed": res["FAILED"], "skipped": res["SKIPPED"], "crashed": running}


def attention_rows(text):
    """{(impl, hs, T): {"fwd": TFLOP/s or None, "fwdbwd": TFLOP/s}} from bench/attention's table."""
    rows = {}
    for line in (text or "").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 9 or not cells[1].isdigit():
            continue
        impl = ("sixnd atomic" if "atomic" in cells[0] else "sixnd") if cells[0].startswith("sixnd") else "torch"

        def num(c):
            try:
                return float(c)
            except ValueError:
                return None
        rows[(impl, int(cells[1]), int(cells[2]))] = {"fwd": num(cells[6]), "fwdbwd": num(cells[8])}
    return rows


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


def build(args):
    out = args.out
    steps = read_steps(out)
    device = not args.no_device
    problems, notes, failing = [], [], []
    rows = []

    def step_status(name):
        return steps.get(name, {}).get("status", "not run")

    # --- the test binaries
    for t in TESTS:
        st = step_status(t)
        text = read(out, f"{t}.log")
        c = gtest_counts(text or "")
        n = len(c["passed"]) + len(c["failed"]) + len(c["skipped"])
        if st.startswith("skipped"):
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
        rows.append([f"{t} (cases)", cell, "", "", "", ""])

    # --- compute-sanitizer
    for s in ("memcheck", "racecheck"):
        st = step_status(s)
        text = read(out, f"{s}.log") or ""
        m = re.search(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) error", text) or \
            re.search(r"ERROR SUMMARY: (\d+) error", text)
        if st.startswith("skipped"):
            cell = st
        elif re.search(r"[Dd]evice not supported|not supported on this (device|platform)", text):
            cell = "unavailable: the sanitizer does not support this device (see log)"
            notes.append(f"{s}: compute-sanitizer cannot run on this machine")
        else:
            errors = int(m.group(1)) if m else None
            cell = f"{errors} errors" if errors is not None else "no summary"
            if st != "ok" or errors != 0:
                cell = f"{st.upper()}: {cell}" if st != "ok" else f"FAILED: {cell}"
                problems.append(f"{s}: {st}, {cell}")
        rows.append([f"compute-sanitizer {s}, attention", cell, "", "", "", ""])

    # --- the peak MFU is measured against: sixnd's device table (model_bench, else attention_bench)
    sixnd_gpt = {p: (json_lines(read(out, f"gpt2_sixnd_{p}.log")) or [None])[-1] for p in POLICIES}
    peak = None
    for j in sixnd_gpt.values():
        if j and j.get("peak_tflops"):
            peak = float(j["peak_tflops"])
            break
    att_s_text = read(out, "attention_sixnd.md")
    if peak is None and att_s_text:
        m = re.search(r"peak bf16 dense: ([0-9.]+) TFLOP/s", att_s_text)
        peak = float(m.group(1)) if m else None

    def mfu_tflops(x):
        return None if x is None or not peak else x / peak

    # --- attention
    att_s, att_t = attention_rows(att_s_text), attention_rows(read(out, "attention_torch.md"))
    for name in ("attention_sixnd", "attention_torch"):
        st = step_status(name)
        if device and st != "ok":
            problems.append(f"{name}: {st}")
    # With a device every expected shape gets a row, so a missing number shows as a gap.
    expected = {(hs, T) for hs in (64, 128) for T in args.seq_lens} if device else set()
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
    torch_lines = {j.get("variant"): j for j in json_lines(read(out, "gpt2_torch.log"))}
    if device and step_status("gpt2_torch") != "ok":
        problems.append(f"gpt2_torch: {step_status('gpt2_torch')}")
    for p in POLICIES:
        st = step_status(f"gpt2_sixnd_{p}")
        if device and st != "ok":
            problems.append(f"gpt2_sixnd_{p}: {st}")
        s = sixnd_gpt[p]
        s_tps = s.get("tokens_per_s") if s else None
        s_mfu = s.get("mfu") if s else None
        for variant, label in (("eager", "PyTorch eager"), ("compile", "torch.compile")):
            t = torch_lines.get(variant)
            t_tps = t.get("tokens_per_s") if t else None
            t_mfu = t.get("mfu") if t else None
            if t_mfu is None and t_tps and peak and t.get("flops_per_token"):
                t_mfu = t["flops_per_token"] * t_tps / (peak * 1e12)
            rows.append([f"GPT-2 124M train, recompute {p} vs {label} (tok/s)", fmt(s_tps, 0), fmt(t_tps, 0),
                         ratio(s_tps, t_tps), pct(s_mfu), pct(t_mfu)])

    timeouts = [f"{n} ({v['limit']} s)" for n, v in steps.items() if v["status"] == "timeout"]
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    lines = [f"# sixnd gpu_check, {date}, {args.gpu or 'no GPU'}; GPT-2 B={args.batch} T=1024 bf16; "
             f"peak {fmt(peak)} TFLOP/s (sixnd's table); {args.elapsed} s of a {args.budget} s budget"]
    if not device:
        verdict = f"NO DEVICE: {args.no_device}; nothing ran on a GPU (test binaries started and skipped)"
        if problems:
            verdict = "FAILED: " + "; ".join(problems) + f" (and no device: {args.no_device})"
    else:
        verdict = "FAILED: " + "; ".join(problems) if problems else "PASSED: every check"
    lines.append(f"result: {verdict}")
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
    return "\n".join(lines), bool(problems)


def main():
    ap = argparse.ArgumentParser(description="gpu_check's verdict and table")
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget", type=int, default=0)
    ap.add_argument("--elapsed", type=int, default=0)
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--gpu", default="")
    ap.add_argument("--seq-lens", default="1024,2048,4096", help="the attention benchmark's T values")
    ap.add_argument("--no-device", default="", help="why there is no device (empty: a device is present)")
    args = ap.parse_args()
    args.seq_lens = [int(t) for t in args.seq_lens.split(",")]
    text, failed = build(args)
    print(text)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write(text + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
