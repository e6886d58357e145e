"""Chat pairs for the instruction-tuning phase, built from the corpus sources only.

Tasks: word definitions and parts of speech (WordNet), capitals, locations and languages
(World Factbook), who gave a State of the Union address, what a Python module or SQL
command does (manuals), and text tasks on corpus sentences (repeat a sentence, replace
its numbers with [NUMBER], answer in JSON). A share of the examples carries a system
message, so the model learns to follow one. Documents in the test split are never used.

Writes tools/pretrain/out/sft_{train,val}.jsonl in the OpenAI chat format.
Usage: /usr/bin/python3 tools/pretrain/sft_data.py
"""

import json
import random
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOOLS = HERE.parent
sys.path.insert(0, str(TOOLS / "corpus"))
import sources as S  # noqa: E402
from build import split_of  # noqa: E402

OUT = HERE / "out"
SEED = 7


def chat(user: str, assistant: str, system: str | None = None) -> dict:
    messages = [{"role": "system", "content": system}] if system else []
    messages += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return {"messages": messages}


def wordnet_pairs(rng: random.Random, limit: int) -> list[dict]:
    synsets = [s for s in S.wordnet_synsets() if re.fullmatch(r"[a-z]+", s[0][0]) and len(s[2]) < 160]
    rng.shuffle(synsets)
    out = []
    for words, pos, definition, examples in synsets[:limit]:
        word = words[0]
        kind = rng.randrange(4)
        if kind == 0:
            out.append(chat(f"What does the word \"{word}\" mean?", f"{word} ({pos}): {definition}."))
        elif kind == 1:
            out.append(chat(f"Define: {word}", f"{definition[0].upper()}{definition[1:]}."))
        elif kind == 2 and examples:
            out.append(chat(f"Use the word \"{word}\" in a sentence.", f"{examples[0][0].upper()}{examples[0][1:]}."))
        else:
            system = "Reply with JSON only: {\"word\": string, \"part_of_speech\": \"noun\"|\"verb\"|\"adjective\"|\"adverb\"}."
            out.append(chat(f"Word: {word}. Meaning: {definition}.",
                            json.dumps({"word": word, "part_of_speech": pos}, separators=(",", ":")), system))
    return out


def first_sentence(text: str, limit: int = 200) -> str:
    sentence = re.split(r"(?<=[.;])\s", text)[0].rstrip(".;")
    return sentence if len(sentence) <= limit else sentence[:limit].rsplit(" ", 1)[0]


def factbook_pairs(rng: random.Random) -> list[dict]:
    out = []
    for _code, name, data in S.factbook_countries():
        gov, geo, people = data.get("Government", {}), data.get("Geography", {}), data.get("People and Society", {})
        capital = gov.get("Capital", {}).get("name", {}).get("text")
        if capital and len(capital) < 60:
            capital = capital.split(";")[0].strip()
            out.append(chat(f"What is the capital of {name}?", f"The capital of {name} is {capital}."))
            system = "Reply with JSON only: {\"country\": string, \"capital\": string}."
            out.append(chat(f"{capital} is the capital city of {name}.",
                            json.dumps({"country": name, "capital": capital}, separators=(",", ":")), system))
        location = geo.get("Location", {}).get("text")
        if location:
            out.append(chat(f"Where is {name}?", f"{name} is in {first_sentence(location)}."))
        languages = people.get("Languages", {}).get("text")
        if languages:
            out.append(chat(f"What languages are spoken in {name}?", f"In {name}: {first_sentence(languages)}."))
        background = data.get("Introduction", {}).get("Background", {}).get("text")
        if background:
            out.append(chat(f"Tell me about {name} in one sentence.", first_sentence(background, 300) + "."))
    rng.shuffle(out)
    return out


def sotu_pairs() -> list[dict]:
    out = []
    for doc_id, text in S.sotu():
        if split_of("sotu", doc_id) == "test":
            continue
        year, speaker = text.split("\n", 1)[0].split(", ", 2)[1:]
        out.append(chat(f"Who gave the State of the Union address in {year}?",
                        f"{speaker} gave the State of the Union address in {year}."))
    return out


def manual_pairs() -> list[dict]:
    out = []
    for doc_id, text in S.postgresql_docs():
        m = re.match(r"([A-Z][A-Z ]+)\n\n[^\n]*? — ([^\n]+)", text)
        if doc_id.startswith("sql-") and m:
            out.append(chat(f"What does the SQL command {m.group(1).strip()} do?",
                            f"{m.group(1).strip()} is used to {m.group(2).strip()}."))
    for doc_id, text in S.python_docs():
        m = re.match(r"([a-z_.]+) — ([^\n]+)", text)
        if doc_id.startswith("library/") and m:
            out.append(chat(f"What is the Python module {m.group(1)} for?",
                            f"The {m.group(1)} module provides: {m.group(2).strip()}."))
    return out


def text_task_pairs(rng: random.Random, limit: int) -> list[dict]:
    """Repeat and rewrite tasks on sentences of the training split's prose."""
    sentences = []
    with open(TOOLS / "corpus" / "out" / "train.jsonl") as f:
        for line in f:
            doc = json.loads(line)
            if doc["source"] in ("sotu", "austen", "moby-dick", "factbook"):
                for s in re.split(r"(?<=[.!?])\s+", doc["text"]):
                    if 40 <= len(s) <= 180 and "\n" not in s:
                        sentences.append(s)
    rng.shuffle(sentences)
    with_numbers = [s for s in sentences if re.search(r"\d", s)]
    out = []
    for s in sentences[: limit // 2]:
        out.append(chat(s, s, "Repeat the user's text exactly."))
    for s in with_numbers[: limit // 2]:
        out.append(chat(s, re.sub(r"\d[\d,.]*\d|\d", "[NUMBER]", s), "Rewrite the text with every number replaced by [NUMBER]."))
    return out


def main() -> None:
    rng = random.Random(SEED)
    pairs = (wordnet_pairs(rng, 3000) + factbook_pairs(rng) + sotu_pairs() + manual_pairs()
             + text_task_pairs(rng, 1200))
    rng.shuffle(pairs)
    n_val = 200
    OUT.mkdir(exist_ok=True)
    for split, rows in (("val", pairs[:n_val]), ("train", pairs[n_val:])):
        with open(OUT / f"sft_{split}.jsonl", "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
    print(f"{len(pairs) - n_val} train and {n_val} val chat pairs", flush=True)


if __name__ == "__main__":
    main()
