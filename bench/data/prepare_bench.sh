#!/usr/bin/env bash
# Throughput of `sixnd data prepare` on real text found on any Debian machine: the packages'
# copyright files (plain text, many copies of the same licences), their gzip'd changelogs and
# the fortunes (many short documents). Runs the pipeline with 1 and with all threads and writes
# a markdown table: per stage documents/s and MB/s per core (thread time), MinHash MB/s per
# core, end-to-end MB/s, and peak memory.
#   bench/data/prepare_bench.sh [SIXND_BIN] [OUT.md]
set -euo pipefail
. "$(dirname "$0")/../own_process_group.sh"
BIN=${1:-${SIXND_BIN:-build-data/sixnd}}
OUT=${2:-bench/results/data.md}
F=/usr/share/games/fortunes
[ -x "$BIN" ] || { echo "prepare_bench: $BIN: no sixnd binary there (give its path: prepare_bench.sh SIXND_BIN)" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# failed WHAT STATUS LOG: the step's own error, from the log that the exit removes with $T (less
# /usr/bin/time's report, whose lines follow it).
failed() {
    echo "prepare_bench: $1 failed (exit $2):" >&2
    grep -v -e '^[[:space:]]' -e '^Command ' "$3" | tail -n 5 >&2
    exit 1
}
mkdir "$T/fortunes"
for f in "$F"/*; do [[ "$(basename "$f")" == *.* ]] || ln -s "$f" "$T/fortunes/"; done
cat "$T"/fortunes/* /usr/share/doc/*/copyright >"$T/tok_corpus.txt"
"$BIN" tokenizer train --input "$T/tok_corpus.txt" --vocab-size 4096 --special '<|endoftext|>' --out "$T/tok.bin" >/dev/null 2>"$T/logt" ||
    failed "$BIN tokenizer train" $? "$T/logt"

# nproc takes OMP_NUM_THREADS for the CPU count: under OMP_NUM_THREADS=1 both runs had one thread.
threads_all=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
load_before=$(cut -d' ' -f1 /proc/loadavg)
for threads in 1 "$threads_all"; do
    /usr/bin/time -v "$BIN" data prepare \
        --source "copyright=/usr/share/doc/*/copyright" \
        --source "changelog=/usr/share/doc/[a-f]*/changelog*.gz" \
        --source "fortunes=$T/fortunes" \
        --tokenizer "$T/tok.bin" --out "$T/out$threads" --threads "$threads" --min-words 10 \
        2>"$T/log$threads" || failed "$BIN data prepare --threads $threads" $? "$T/log$threads"
done
# Dedup and tokenizing measured on the whole corpus: the filters off, one thread.
/usr/bin/time -v "$BIN" data prepare \
    --source "copyright=/usr/share/doc/*/copyright" \
    --source "changelog=/usr/share/doc/[a-f]*/changelog*.gz" \
    --source "fortunes=$T/fortunes" \
    --tokenizer "$T/tok.bin" --out "$T/outd" --threads 1 --no-langid --no-quality --no-repetition \
    2>"$T/logd" || failed "$BIN data prepare (filters off)" $? "$T/logd"
load_after=$(cut -d' ' -f1 /proc/loadavg)
python3 - "$T" "$threads_all" "$OUT" "$(lscpu | sed -n 's/^Model name: *//p' | head -1)" "$load_before" "$load_after" <<'PY'
import json, os, re, sys
T, nall, out, cpu, load0, load1 = sys.argv[1:7]
def load(threads):
    log = open(f"{T}/log{threads}").read()
    timing = json.loads(re.search(r"timing (\{.*\})", log).group(1))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", log).group(1))
    m = json.load(open(f"{T}/out{threads}/manifest.json"))
    return timing, rss, m
t1, rss1, m = load(1)
tn, rssn, _ = load(nall)
td, rssd, md = load("d")
st = {s["stage"]: s for s in m["stages"]}
raw = sum(i["bytes"] for i in m["inputs"])
docs = st["ingest"]["documents"]["in"]
rows = []
def row(name, d, b, s1, sn, note=""):
    rows.append(f"| {name} | {d:,} | {b/1e6:.1f} | {d/s1:,.0f} | {b/1e6/s1:.1f} | {b/1e6/sn:.1f} | {note} |")
for stage in ("ingest", "langid", "quality", "repetition"):
    c = st[stage]
    row(stage, c["documents"]["in"], c["bytes"]["in"], t1[stage + "_thread_s"], tn[stage + "_thread_s"] / 1,
        f"{c['documents']['removed']:,} removed")
c = st["dedup_exact"]
row("normalise + exact hash", c["documents"]["in"], c["bytes"]["in"], t1["dedup_exact_thread_s"], tn["dedup_exact_thread_s"],
    f"{c['documents']['removed']:,} removed")
row("MinHash signatures", c["documents"]["in"], c["bytes"]["in"], t1["dedup_near_thread_s"], tn["dedup_near_thread_s"],
    f"{st['dedup_near']['documents']['removed']:,} near-duplicates removed")
row("LSH + union-find (wall)", c["documents"]["in"], c["bytes"]["in"], t1["dedup_s"], tn["dedup_s"])
kept = st["decontaminate"]["documents"]["kept"]
kb = st["decontaminate"]["bytes"]["kept"]
row("tokenize (pass 2, wall)", kept, kb, t1["tokenize_s"], tn["tokenize_s"], f"{m['output']['train']['tokens'] + m['output']['val']['tokens']:,} tokens")
row("end to end (wall)", docs, raw, t1["total_s"], tn["total_s"], "all passes, from raw input bytes")
sd = {s["stage"]: s for s in md["stages"]}
c = sd["dedup_exact"]
rows.append(f"| *filters off, 1 thread:* | | | | | | |")
def row1(name, d, b, s, note=""):
    rows.append(f"| {name} | {d:,} | {b/1e6:.1f} | {d/s:,.0f} | {b/1e6/s:.1f} | | {note} |")
row1("normalise + exact hash", c["documents"]["in"], c["bytes"]["in"], td["dedup_exact_thread_s"], f"{c['documents']['removed']:,} removed")
row1("MinHash signatures", c["documents"]["in"], c["bytes"]["in"], td["dedup_near_thread_s"],
     f"{sd['dedup_near']['documents']['removed']:,} near-duplicates removed")
row1("LSH + union-find (wall)", c["documents"]["in"], c["bytes"]["in"], td["dedup_s"])
kd = sd["decontaminate"]
row1("tokenize (pass 2, wall)", kd["documents"]["kept"], kd["bytes"]["kept"], td["tokenize_s"],
     f"{md['output']['train']['tokens'] + md['output']['val']['tokens']:,} tokens")
row1("end to end (wall)", docs, raw, td["total_s"], f"peak memory {rssd/1024:.0f} MiB")
hdr = f"""## sixnd data prepare

Corpus: Debian's /usr/share/doc/*/copyright ({st['ingest']['documents']['in']:,} documents in all with the
changelogs of packages a-f, gzip'd) and the fortunes: {raw/1e6:.1f} MB of real text as read. Default
Gopher and FineWeb settings except `--min-words 10`; tokenizer: sixnd BPE, 4096 tokens.
Machine: {cpu}, {nall} cores, shared with other work while measured (load average {load0} before,
{load1} after: rates are lower bounds, and the {nall}-thread run suffers most). Measured by
`bench/data/prepare_bench.sh`. Stage rows are per core: MB (or documents) entering the stage
divided by the thread-seconds spent in it, summed over threads; "(wall)" rows divide by elapsed
seconds. MinHash is computed on the normalised words of the documents that pass the filters. Peak memory (max RSS): {rss1/1024:.0f} MiB at 1 thread, {rssn/1024:.0f} MiB at {nall}.

| stage | documents in | MB in | docs/s, 1 thread | MB/s, 1 thread | MB/s, {nall} threads | notes |
|---|---:|---:|---:|---:|---:|---|
"""
end = f"""
End to end: {raw/1e6/t1['total_s']:.1f} MB/s on 1 thread, {raw/1e6/tn['total_s']:.1f} MB/s on {nall} threads
({t1['total_s']:.1f} s and {tn['total_s']:.1f} s).
"""
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
# Whole or not at all: a benchmark stopped while writing leaves the earlier results.
with open(out + ".partial", "w") as f:
    f.write(hdr + "\n".join(rows) + "\n" + end)
os.replace(out + ".partial", out)
print(open(out).read())
PY
