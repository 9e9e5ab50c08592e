"""The drawing half of `sixnd report` (cli/report.cpp writes REPORT_INPUT.json and starts this
script): reads the run logs the input names (each with the lines of the branch the run ended
on, which the table counts), draws the plots as PNG files of a fixed size
(1000 x 550 pixels), and writes report.md and a self-contained report.html (plots embedded as
base64) with the results table and the configuration.

It lives in scripts/ because it is a program the binary starts, not a library of any room; the
binary finds it beside itself, in $SIXND_SOURCE/scripts, or in the source tree above its
build directory.

Usage: report_plots.py REPORT_INPUT.json OUT_DIR [FAULT_FD]. Exits 3 when matplotlib is missing.
A file it cannot write (disk full, file too large) ends it with status 1 and one line, "NAME\tFAULT"
(NAME relative to OUT_DIR), written to FAULT_FD when given (sixnd report makes that line its
error; a pipe, as the disk may take nothing more), else as "OUT_DIR/NAME: FAULT" to stderr."""
import base64
import bisect
import contextlib
import html
import json
import math
import os
import signal
import sys

# Ctrl-C ends the drawing as a signal, as it does sixnd report around it, not with a traceback.
signal.signal(signal.SIGINT, signal.SIG_DFL)

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("report_plots.py: matplotlib is not installed (Debian: apt-get install python3-matplotlib)", file=sys.stderr)
    sys.exit(3)

FIGSIZE, DPI = (10, 5.5), 100  # 1000 x 550 pixels
PLOTS = [("loss.png", "Train and validation loss"), ("lr.png", "Learning rate"),
         ("grad_norm.png", "Gradient norm, spikes, skips and rollbacks"), ("throughput.png", "Tokens/s and MFU"),
         ("memory.png", "Memory by category"), ("comm.png", "Bytes sent per rank")]
MEMORY_ORDER = ["params", "grads", "master", "adam_m", "adam_v", "activations", "workspace"]


def read_log(path, branch):
    """(header, {step: record}, [event]) of the branch the run ended on: the step and event records
    on the lines sixnd report names in `branch` ([first, last] ranges; train/run_metrics.h says
    which records a resume or a rollback leaves behind), so that the plots draw what the table
    counts. The header is the log's last."""
    header, steps, events = {}, {}, []
    kept = set()
    for first, last in branch:
        kept.update(range(first, last + 1))
    # Lines end at "\n" alone, as sixnd counts them: a "\r" is whitespace inside a JSON record,
    # where Python's universal newlines would start a line and shift every number after it. The
    # path is UTF-8 bytes (sixnd takes no other), whatever this Python's file system encoding.
    with open(path.encode("utf-8"), encoding="utf-8", newline="\n") as f:
        for number, line in enumerate(f, 1):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            kind = r.get("type")
            if kind == "header":
                header = r
            elif number not in kept:
                continue
            elif kind == "step":
                steps[r["step"]] = r
            elif kind == "event":
                events.append(r)
    return header, dict(sorted(steps.items())), events


def tokens_at(header, steps, logged, step):
    """The tokens a run had trained on after `step`: the last step record's at or before it plus a
    batch per step since (a skipped step, which logs no record, consumes its batch too). logged:
    the steps' numbers, sorted."""
    i = bisect.bisect_right(logged, step)
    last = logged[i - 1] if i else 0
    return (steps[last]["tokens"] if i else 0) + (step - last) * header.get("batch_tokens", 0)


class Series:
    """One line of every plot: a variant (its seeds drawn as a band) or a single run."""

    def __init__(self, label, logs):
        """logs: (path, branch) of each seed's run log."""
        self.label = label
        self.runs = [read_log(p, branch) for p, branch in logs]

    def curve(self, key, x="tokens", sub=None):
        """(xs, mean, lo, hi) over the seeds, at the x values every seed has."""
        per_run = []
        for header, steps, events in self.runs:
            pts = {}
            for r in steps.values():
                v = r.get(key)
                if isinstance(v, dict):
                    v = v.get(sub)
                if isinstance(v, (int, float)) and v is not None and math.isfinite(v):
                    pts[r[x]] = v
            if key in ("val_loss", "val_bpb"):
                # A skipped step is evaluated when one is due, but writes no step record: its
                # numbers are in its eval event only (as train/run_metrics.h reads them too).
                logged = sorted(steps)
                for e in events:
                    v = e.get(key)
                    if e.get("event") == "eval" and e["step"] not in steps and isinstance(v, (int, float)) and math.isfinite(v):
                        pts[e["step"] if x == "step" else tokens_at(header, steps, logged, e["step"])] = v
            per_run.append(pts)
        common = sorted(set.intersection(*(set(p) for p in per_run))) if per_run else []
        mean = [sum(p[c] for p in per_run) / len(per_run) for c in common]
        lo = [min(p[c] for p in per_run) for c in common]
        hi = [max(p[c] for p in per_run) for c in common]
        return common, mean, lo, hi


def band(ax, s, key, color, x="tokens", style="-", label=None, marker=None):
    xs, mean, lo, hi = s.curve(key, x)
    if not xs:
        return False
    ax.plot(xs, mean, style, color=color, label=label, marker=marker, markersize=4)
    if len(s.runs) > 1:
        ax.fill_between(xs, lo, hi, color=color, alpha=0.2, linewidth=0)
    return True


def new_fig(ncols=1):
    fig, axes = plt.subplots(1, ncols, figsize=FIGSIZE, dpi=DPI)
    return fig, (axes if ncols > 1 else [axes])


class WriteFault(Exception):
    """NAME (relative to OUT_DIR) could not be written: args (name, fault)."""


@contextlib.contextmanager
def writing(name):
    """Turns an OSError while NAME is written into a WriteFault naming it: the OSError itself may
    name no file (PIL's writes) or the temporary one."""
    try:
        yield
    except OSError as e:
        raise WriteFault(name, e.strerror or str(e)) from None


def save(fig, out, name, title):
    fig.suptitle(title)
    fig.subplots_adjust(left=0.08, right=0.98, top=0.88, bottom=0.12, wspace=0.25)
    with writing(name):
        fig.savefig(os.path.join(out, name), dpi=DPI)
    plt.close(fig)


def no_data(ax, what):
    ax.text(0.5, 0.5, what, ha="center", va="center", transform=ax.transAxes, color="gray")


NO_STEPS = "nothing to draw: no step record on the branch the runs ended on holds it\n(a run that diverged at its first step has no step record)"


def legend(ax):
    """The legend, or where nothing was drawn, why: an empty plot says so (and matplotlib warns of
    a legend without entries on stderr)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    else:
        no_data(ax, NO_STEPS)


def plot_loss(series, out, colors):
    fig, (ax, bx) = new_fig(2)
    any_bpb = False
    for s, c in zip(series, colors):
        band(ax, s, "loss", c, label=f"{s.label} train")
        band(ax, s, "val_loss", c, style="--", marker="o", label=f"{s.label} val")
        any_bpb |= band(bx, s, "val_bpb", c, style="--", marker="o", label=s.label)
    ax.set(xlabel="tokens", ylabel="loss (nats/token)", title="loss (band: min-max over seeds)")
    legend(ax)
    bx.set(xlabel="tokens", ylabel="bits per byte", title="validation bits per byte")
    if any_bpb:
        bx.legend(fontsize=7)
    else:
        no_data(bx, "no bits per byte:\nthe runs had no --tokenizer or no validation")
    save(fig, out, "loss.png", "Train and validation loss")


def plot_lr(series, out, colors):
    fig, (ax,) = new_fig()
    for s, c in zip(series, colors):
        band(ax, s, "lr", c, x="step", label=s.label)
    ax.set(xlabel="step", ylabel="learning rate")
    legend(ax)
    save(fig, out, "lr.png", "Learning rate")


MARKS = {"spike": ("x", "red"), "skip": ("v", "orange"), "rollback": ("^", "purple")}


def finite(v):
    return v if isinstance(v, (int, float)) and math.isfinite(v) and v > 0 else None


def event_markers(header, steps, events):
    """(kind, tokens, grad norm or None) of each spike, skip and rollback. A skipped step logs no
    step record, and a rolled-back one is logged again by the steps that replace it, so each
    marker stands where the run was when it fired (tokens_at), at the gradient norm its events
    at that step logged; None where they logged none that is finite."""
    norm_at = {}
    for e in events:
        if e.get("event") in MARKS and finite(e.get("grad_norm")) is not None:
            norm_at.setdefault(e["step"], e["grad_norm"])
    logged, marks = sorted(steps), []
    for e in events:
        kind, s = e.get("event"), e.get("step")
        if kind not in MARKS:
            continue
        y = norm_at.get(s, finite(steps[s].get("grad_norm")) if s in steps else None)
        marks.append((kind, tokens_at(header, steps, logged, s), y))
    return marks


def plot_grad_norm(series, out, colors):
    fig, (ax,) = new_fig()
    seen = set()
    for s, c in zip(series, colors):
        band(ax, s, "grad_norm", c, label=s.label)
        for header, steps, events in s.runs:
            for kind, x, y in event_markers(header, steps, events):
                m, mc = MARKS[kind]
                # Without a finite norm (a non-finite gradient) the marker goes at the top edge.
                at = dict(transform=ax.get_xaxis_transform()) if y is None else {}
                ax.plot([x], [0.97 if y is None else y], m, color=mc, markersize=9, label=kind if kind not in seen else None,
                        **at)
                seen.add(kind)
    ax.set(xlabel="tokens", ylabel="global gradient norm (before clipping)", yscale="log")
    legend(ax)
    save(fig, out, "grad_norm.png", "Gradient norm (markers: spike x, skip v, rollback ^)")


def plot_throughput(series, out, colors):
    fig, (ax, bx) = new_fig(2)
    for s, c in zip(series, colors):
        band(ax, s, "tokens_per_s", c, x="step", label=s.label)
        for key, style in (("mfu", "-"), ("hfu", ":")):
            xs, mean, _, _ = s.curve(key, "step")
            if xs:
                bx.plot(xs, [100 * v for v in mean], style, color=c, label=f"{s.label} {key.upper()}")
    ax.set(xlabel="step", ylabel="tokens/s", title="throughput")
    bx.set(xlabel="step", ylabel="% of peak", title="MFU (solid) and HFU (dotted)")
    legend(ax)
    legend(bx)
    save(fig, out, "throughput.png", "Tokens/s and MFU")


def memory_categories(series):
    cats = set()
    for s in series:
        for _, steps, _ in s.runs:
            for r in steps.values():
                cats |= {k for k, v in r.get("memory", {}).items() if isinstance(v, (int, float))}
    return [c for c in MEMORY_ORDER if c in cats] + sorted(cats - set(MEMORY_ORDER) - {"total", "peak", "device_in_use"})


def plot_memory(series, out, colors):
    cats = memory_categories(series)
    cmap = plt.get_cmap("tab10")
    fig, (ax,) = new_fig()
    if not cats:
        # A log's step records need not hold memory (sixnd report's checks take it as optional).
        no_data(ax, "no memory by category in the run logs")
    elif len(series) == 1 and len(series[0].runs[0][1]) > 1:
        # One run: the categories stacked over its steps.
        _, steps, _ = series[0].runs[0]
        xs = list(steps)
        ys = [[steps[x].get("memory", {}).get(c, 0) / 2**20 for x in xs] for c in cats]
        ax.stackplot(xs, ys, labels=cats, colors=[cmap(i) for i in range(len(cats))])
        ax.set(xlabel="step", ylabel="MiB (rank 0)")
    else:
        # Several variants: each one's largest value per category (mean over seeds), stacked.
        bottoms = [0.0] * len(series)
        for i, c in enumerate(cats):
            vals = []
            for s in series:
                per_run = [max((r.get("memory", {}).get(c, 0) for r in steps.values()), default=0) for _, steps, _ in s.runs]
                vals.append(sum(per_run) / len(per_run) / 2**20)
            ax.bar(range(len(series)), vals, bottom=bottoms, label=c, color=cmap(i))
            bottoms = [b + v for b, v in zip(bottoms, vals)]
        ax.set_xticks(range(len(series)), [s.label for s in series], fontsize=8, rotation=10)
        ax.set(ylabel="peak MiB per category (rank 0)")
    if cats:
        ax.legend(fontsize=7, loc="upper left")
    save(fig, out, "memory.png", "Memory by category")


def bytes_per_rank(steps):
    """Bytes each rank sent over the run: comm_ranks under mpirun, else rank 0's comm_bytes."""
    ranks = None
    for r in steps.values():
        if "comm_ranks" in r:
            sent = [sum(v for v in per.values() if isinstance(v, (int, float))) for per in r["comm_ranks"]]
            ranks = sent if ranks is None else [a + b for a, b in zip(ranks, sent)]
    return ranks if ranks is not None else [sum(r.get("comm_bytes", 0) for r in steps.values())]


def plot_comm(series, out, colors):
    fig, (ax,) = new_fig()
    width = 0.8 / max(1, len(series))
    any_bytes = False
    for i, (s, c) in enumerate(zip(series, colors)):
        per_run = [bytes_per_rank(steps) for _, steps, _ in s.runs]
        n = min(len(p) for p in per_run)
        vals = [sum(p[k] for p in per_run) / len(per_run) / 2**20 for k in range(n)]
        any_bytes |= any(v > 0 for v in vals)
        ax.bar([k + i * width for k in range(n)], vals, width=width, color=c, label=s.label)
    ranks = max((min(len(bytes_per_rank(st)) for _, st, _ in s.runs) for s in series), default=1)
    ax.set_xticks([k + (len(series) - 1) * width / 2 for k in range(ranks)], [str(k) for k in range(ranks)])
    ax.set(xlabel="rank", ylabel="MiB sent over the run (mean over seeds)")
    ax.legend(fontsize=7)
    if not any_bytes:
        no_data(ax, "no bytes sent: one process (run under mpirun to see collectives)")
    save(fig, out, "comm.png", "Bytes sent per rank")


# ---- the table and the reports ----

COLUMNS = [("final_train_loss", "train loss", "{:.4f}"), ("val_loss", "val loss", "{:.4f}"),
           ("val_bpb", "val bpb", "{:.4f}"), ("tokens_per_s", "tokens/s", "{:.0f}"), ("mfu", "MFU", "{:.2%}"),
           ("hfu", "HFU", "{:.2%}"), ("peak_memory", "peak MiB", "{:.1f}"), ("comm_bytes", "MiB sent", "{:.1f}"),
           ("spikes", "spikes", "{:.1f}"), ("wall_clock_s", "time in steps s", "{:.1f}")]


LEGEND = ("Mean ± sample std over seeds; time in steps: seconds spent in training steps over the whole run (the sum "
          "of step times; start-up, evaluation and checkpoints left out); Δ and p: final validation loss against the "
          "base (Welch's t-test); loss_equal: speed-only knobs whose losses equal the base's.")


def fmt(v, f):
    return "-" if v is None else f.format(v)


def cell(key, f, mean, std=None):
    if key in ("peak_memory", "comm_bytes"):
        mean = None if mean is None else mean / 2**20
        std = None if std is None else std / 2**20
    return fmt(mean, f) + ("" if std is None else " ± " + fmt(std, f))


def variant_name(src, v):
    """A variant's row and legend name: prefixed by its ablation's name where the report has
    several (sixnd report names each by its path then; their variants share names: base, ...)."""
    return f"{src['name']}: {v['name']}" if src.get("name") else v["name"]


def table_rows(sources):
    """(header, rows) of the results table: one row per variant or run."""
    head = ["variant / run", "seeds"] + [c[1] for c in COLUMNS] + ["Δ val loss", "p (Welch)", "loss_equal"]
    rows = []
    for src in sources:
        if src["kind"] == "ablation":
            for v in src["results"]["variants"]:
                m = v["metrics"]
                row = [variant_name(src, v), str(len(v["runs"])) + (f" ({v['diverged']} diverged)" if v.get("diverged") else "")]
                for key, _, f in COLUMNS:
                    st = m[key].get("peak", {"mean": None, "std": None}) if key == "peak_memory" else m[key]
                    row.append(cell(key, f, st["mean"], st["std"]))
                le = v.get("loss_equal")
                row += [fmt(v.get("val_loss_diff"), "{:+.4f}"), fmt(v.get("p_value"), "{:.3g}"),
                        "-" if le is None else ("true" if le else "false")]
                rows.append(row)
        else:
            m = src["metrics"]
            row = [src["name"], "1" + (" (1 diverged)" if m.get("diverged") else "")]
            for key, _, f in COLUMNS:
                row.append(cell(key, f, m[key].get("peak") if key == "peak_memory" else m[key]))
            rows.append(row + ["-", "-", "-"])
    return head, rows


def build_series(sources):
    series = []
    for src in sources:
        if src["kind"] == "ablation":
            base = src["path"]
            for v in src["results"]["variants"]:
                series.append(Series(variant_name(src, v), [(os.path.join(base, r["log"]), r["branch"]) for r in v["runs"]]))
        else:
            series.append(Series(src["name"], [(src["path"], src["branch"])]))
    return series


def config_blocks(sources):
    blocks = []
    for src in sources:
        if src["kind"] == "ablation":
            r = src["results"]
            cfg = {"train_args": r["train_args"], "config_file": r["config_file"], "knobs": r["knobs"],
                   "seeds": r["seeds"], "base_config": r["base_config"]}
            blocks.append((f"ablation {src['path']}", cfg))
        else:
            blocks.append((f"run {src['path']}", {"config": src["config"], "model": src["model"], "device": src["device"]}))
    return blocks


def write_whole(out, name, text):
    """Writes under a temporary name, then renames: a report is there whole or not at all."""
    path = os.path.join(out, name)
    with writing(name):
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".tmp", path)


def md(text):
    """Text that Markdown shows as it is, in a table cell or a heading: a run's name or path may
    hold '|' (which would start a new column), '<' (HTML) or a line break."""
    return html.escape(text.replace("\\", "\\\\"), quote=False).replace("|", "\\|").replace("\n", " ")


def write_md(out, sources, head, rows, blocks):
    lines = ["# sixnd report", ""]
    lines += ["Sources: " + ", ".join(f"`{s['path']}`" for s in sources), ""]
    lines += ["## Results", "", LEGEND, ""]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(md(c) for c in r) + " |" for r in rows]
    lines += ["", "## Plots", ""]
    lines += [f"### {title}\n\n![{title}]({name})\n" for name, title in PLOTS]
    lines += ["## Configuration", ""]
    for title, cfg in blocks:
        lines += [f"### {md(title)}", "", "```json", json.dumps(cfg, indent=1), "```", ""]
    write_whole(out, "report.md", "\n".join(lines))


def write_html(out, sources, head, rows, blocks):
    e = html.escape
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>sixnd report</title><style>",
             "body{font-family:sans-serif;margin:24px;max-width:1100px}table{border-collapse:collapse;font-size:13px}",
             "td,th{border:1px solid #bbb;padding:3px 7px;text-align:right;white-space:nowrap}td:first-child,th:first-child{text-align:left}",
             "th{background:#eee}img{width:1000px;border:1px solid #ddd}pre{background:#f6f6f6;padding:8px;font-size:12px}",
             "</style></head><body><h1>sixnd report</h1>",
             "<p>Sources: " + ", ".join(f"<code>{e(s['path'])}</code>" for s in sources) + "</p>",
             f"<h2>Results</h2><p>{e(LEGEND)}</p><table><tr>"]
    parts += [f"<th>{e(h)}</th>" for h in head]
    parts.append("</tr>")
    for r in rows:
        parts.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>")
    parts.append("</table><h2>Plots</h2>")
    for name, title in PLOTS:
        with open(os.path.join(out, name), "rb") as f:
            data = base64.b64encode(f.read()).decode()
        parts.append(f"<h3>{e(title)}</h3><img alt='{e(title)}' src='data:image/png;base64,{data}'>")
    parts.append("<h2>Configuration</h2>")
    for title, cfg in blocks:
        parts.append(f"<h3>{e(title)}</h3><pre>{e(json.dumps(cfg, indent=1))}</pre>")
    parts.append("</body></html>\n")
    write_whole(out, "report.html", "".join(parts))


def draw_report(input_path, out):
    with open(input_path, encoding="utf-8") as f:
        sources = json.load(f)["sources"]
    series = build_series(sources)
    cmap = plt.get_cmap("tab10")
    colors = [cmap(i % 10) for i in range(len(series))]
    for draw in (plot_loss, plot_lr, plot_grad_norm, plot_throughput, plot_memory, plot_comm):
        draw(series, out, colors)
    head, rows = table_rows(sources)
    blocks = config_blocks(sources)
    write_md(out, sources, head, rows, blocks)
    write_html(out, sources, head, rows, blocks)


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[2]
    try:
        draw_report(sys.argv[1], out)
    except WriteFault as e:
        name, fault = e.args
        if len(sys.argv) == 4:
            os.write(int(sys.argv[3]), f"{name}\t{fault}\n".encode())
        else:
            print(f"{os.path.join(out, name)}: {fault}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
