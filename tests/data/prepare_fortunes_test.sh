#!/usr/bin/env bash
# End to end on Debian's fortunes: tokenizer trained by sixnd, then `sixnd data prepare`.
# Checks that fortunes repeated across files appear once in the shards, that the manifest adds
# up stage by stage, that the shards follow llm.c's rules, and that a re-run with another
# thread count gives byte-identical output.
set -euo pipefail
F=/usr/share/games/fortunes
[ -f "$F/fortunes" ] && [ -f "$F/cookie" ] || { echo "skip: Debian's fortunes package is not installed"; exit 77; }
[ -x "${SIXND_BIN:-}" ] || { echo "skip: SIXND_BIN is not set"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# Only the text files: fortune's .dat index files are binary.
mkdir "$T/in"
for f in "$F"/*; do [[ "$(basename "$f")" == *.* ]] || ln -s "$f" "$T/in/"; done

"$SIXND_BIN" tokenizer train --input "$F/fortunes" --vocab-size 512 --special '<|endoftext|>' --out "$T/tok.bin" 2>/dev/null >/dev/null

# 1. Exact dedup alone: every fortune that appears in several files must appear exactly once.
"$SIXND_BIN" data prepare --source "fortunes=$T/in" --tokenizer "$T/tok.bin" --out "$T/exact" \
    --no-langid --no-quality --no-repetition --no-dedup-near --shard-tokens 50000 2>"$T/log"
for s in "$T"/exact/*.bin; do "$SIXND_BIN" tokenizer decode --tokenizer "$T/tok.bin" --input "$s"; done >"$T/exact.txt"
python3 - "$T/in" "$T/exact.txt" "$T/exact/manifest.json" <<'PY'
import json, os, re, sys, collections
indir, decoded, manifest = sys.argv[1:]
norm = lambda d: " ".join(re.findall(r"[^\W_]+", d.lower()))
where = collections.defaultdict(set)
for name in sorted(os.listdir(indir)):
    text = open(os.path.join(indir, name), encoding="utf-8", errors="replace").read()
    for d in re.split(r"\n%\n", text):
        if norm(d): where[norm(d)].add(name)
cross = {k for k, files in where.items() if len(files) > 1}
assert len(cross) > 100, f"expected many cross-file duplicates in fortunes, found {len(cross)}"
out = collections.Counter(norm(d) for d in open(decoded, encoding="utf-8", errors="replace").read().split("<|endoftext|>") if norm(d))
bad = [k for k in cross if out[k] != 1]
assert not bad, f"{len(bad)} cross-file duplicates not kept exactly once, e.g. {bad[:2]}"
m = json.load(open(manifest))
exact = [s for s in m["stages"] if s["stage"] == "dedup_exact"][0]
assert exact["documents"]["removed"] >= len(cross), exact
print(f"ok: {len(cross)} fortunes repeated across files, each kept once; {exact['documents']['removed']} duplicates removed")
PY

# 2. Every stage on, twice, with different thread counts: identical bytes. cookie is its own
# source with weight 2, so the rest leave it out.
mkdir "$T/rest"
for f in "$T"/in/*; do [ "$(basename "$f")" = cookie ] || ln -s "$(readlink "$f")" "$T/rest/"; done
args=(--source "fortunes=$T/rest" --source "cookie=$F/cookie:2" --tokenizer "$T/tok.bin" --min-words 5 --min-stop-words 0
      --shard-tokens 100000 --decontaminate "$F/goedel")
"$SIXND_BIN" data prepare "${args[@]}" --out "$T/a" --threads 2 2>"$T/log"
"$SIXND_BIN" data prepare "${args[@]}" --out "$T/b" --threads 1 2>/dev/null
diff -r "$T/a" "$T/b" >/dev/null || { echo "FAIL: re-run with another thread count differs"; exit 1; }
! ls -d "$T"/*.partial-* 2>/dev/null || { echo "FAIL: scratch directory left behind"; exit 1; }
python3 - "$T/a" <<'PY'
import json, os, struct, sys
out = sys.argv[1]
m = json.load(open(os.path.join(out, "manifest.json")))
prev_kept = None
for s in m["stages"]:
    for unit in ("documents", "bytes"):
        c = s[unit]
        assert c["in"] == c["kept"] + c["removed"], (s["stage"], unit, c)
    assert sum(s["removed_by"].values()) == s["documents"]["removed"], s
    if prev_kept is not None:
        assert s["documents"]["in"] == prev_kept, f"{s['stage']} takes {s['documents']['in']}, previous kept {prev_kept}"
    prev_kept = s["documents"]["kept"]
st = {s["stage"]: s for s in m["stages"]}
assert st["ingest"]["documents"]["in"] == sum(i["documents"] for i in m["inputs"])
assert st["dedup_exact"]["documents"]["removed"] > 0 and st["dedup_near"]["documents"]["removed"] > 0
assert st["decontaminate"]["documents"]["removed"] > 0, "goedel's fortunes are in the sources and must be removed"
assert sum(st["langid"]["languages"].values()) == st["langid"]["documents"]["in"]
split = m["split"]
assert split["val_documents"] + split["train_documents"] == prev_kept
mix = {s["source"]: s for s in m["mixing"]["sources"]}
assert mix["cookie"]["documents_in"] > 500
assert mix["cookie"]["weight"] == 2 and mix["cookie"]["copies_out"] == 2 * mix["cookie"]["documents_in"]
assert mix["cookie"]["repeated_copies"] == mix["cookie"]["documents_in"]
assert m["output"]["train"]["documents"] == sum(s["copies_out"] for s in mix.values())
assert m["output"]["val"]["documents"] == split["val_documents"]
vocab = m["tokenizer"]["vocab_size"]
for split_name in ("train", "val"):
    shards = m["output"][split_name]["shards"]
    assert shards and sum(s["tokens"] for s in shards) == m["output"][split_name]["tokens"]
    for i, s in enumerate(shards):
        data = open(os.path.join(out, s["file"]), "rb").read()
        magic, version, n = struct.unpack("<3i", data[:12])
        assert (magic, version) == (20240520, 1) and n == s["tokens"], (s, magic, version, n)
        assert len(data) == 1024 + 2 * n
        if i + 1 < len(shards): assert n == m["output"]["shard_tokens"]
        toks = struct.unpack(f"<{n}H", data[1024:])
        assert max(toks) < vocab
        if i == 0: assert toks[0] == m["tokenizer"]["eot"]["id"]
for f in m["inputs"]:
    assert len(f["xxh3_64"]) == 16 and f["bytes"] > 0
print("ok: manifest adds up; shards follow llm.c's rules")
PY
for pass in "pass 1/3" "pass 2/3" "pass 3/3"; do
    grep -q "$pass" "$T/log" || { echo "FAIL: no progress of $pass on stderr"; exit 1; }
done

# 3. An evaluation set in JSONL whose text sits in fields of any name (HellaSwag's ctx and
# endings, no "text"): all of it counts, whatever --jsonl-field says of the sources.
python3 - "$F/cookie" "$T/hs.jsonl" <<'PY'
import json, sys
docs = [d.strip() for d in open(sys.argv[1], encoding="utf-8", errors="replace").read().split("\n%\n")]
with open(sys.argv[2], "w") as f:
    for d in [d for d in docs if len(d.split()) >= 40][:5]:
        w = d.split()
        f.write(json.dumps({"ctx": " ".join(w[:10]), "endings": [" ".join(w[10:]), "and then it rained"], "label": 0}) + "\n")
PY
"$SIXND_BIN" data prepare --source "cookie=$F/cookie" --tokenizer "$T/tok.bin" --min-words 5 --min-stop-words 0 \
    --shard-tokens 100000 --decontaminate "$T/hs.jsonl" --out "$T/hs" 2>"$T/hs.log" ||
    { echo "FAIL: decontamination against JSONL items without a text field: $(tail -1 "$T/hs.log")"; exit 1; }
python3 - "$T/hs/manifest.json" <<'PY'
import json, sys
st = {s["stage"]: s for s in json.load(open(sys.argv[1]))["stages"]}
removed = st["decontaminate"]["documents"]["removed"]
assert removed >= 1, f"the fortunes quoted in the items' endings were not removed: {st['decontaminate']}"
print(f"ok: {removed} fortunes quoted in HellaSwag-shaped items removed")
PY
echo PASS
