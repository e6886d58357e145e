"""Reference chat renders from Hugging Face transformers, for chat-template.test.ts.

Reads the family tokenizer folders written by chat-families.ts (one per
fixtures/chat-templates/<family>.jinja, each under <root>/<family>) and prints
JSON: for each family and conversation, the text apply_chat_template renders
(tokenize=False), the ids it tokenizes to (tokenize=True, which encodes with
add_special_tokens=False), and the ids that encoding the same text with
add_special_tokens=True puts in front of those (the BOS that the folder's
post-processor prepends, where it has one).
strftime_now is pinned to 2025-07-10 12:00, the date the tests pin.

Regenerate (needs transformers and jinja2 for /usr/bin/python3):
  npx tsc -b packages/engine
  node -e 'import("./packages/engine/dist/src/testing/chat-families.js").then((m) => m.writeAllFamilyTokenizers("/tmp/svc-chat-families"))'
  python3 packages/engine/src/testing/chat_template_reference.py /tmp/svc-chat-families > packages/engine/src/testing/fixtures/chat-templates/reference.json
"""

import datetime
import json
import os
import re
import sys

import tokenizers
import transformers
import transformers.utils.chat_template_utils as chat_template_utils
from transformers import AutoTokenizer

PINNED_NOW = datetime.datetime(2025, 7, 10, 12, 0, 0)


class PinnedDatetime(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return PINNED_NOW


chat_template_utils.datetime = PinnedDatetime

SYSTEM = {"role": "system", "content": "Be brief."}
TURNS = [
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "It is 4."},
    {"role": "user", "content": "And 3+3?"},
    {"role": "assistant", "content": "6, of course 🙂"},
]

# name → (messages, add_generation_prompt)
CONVERSATIONS = {
    "system": ([SYSTEM, *TURNS], False),
    "no-system": (TURNS, False),
    "prompt": ([SYSTEM, *TURNS[:3]], True),
    "prompt-no-system": (TURNS[:1], True),
}


def main() -> None:
    root = sys.argv[1]
    families = {}
    for family in sorted(os.listdir(root)):
        tokenizer = AutoTokenizer.from_pretrained(os.path.join(root, family))
        renders = {}
        for name, (messages, add_generation_prompt) in CONVERSATIONS.items():
            text = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=add_generation_prompt
            )
            ids = tokenizer.apply_chat_template(
                messages, tokenize=True, add_generation_prompt=add_generation_prompt, return_dict=True
            )["input_ids"]
            with_special_tokens = tokenizer(text)["input_ids"]
            prepended = len(with_special_tokens) - len(ids)
            assert prepended >= 0 and with_special_tokens[prepended:] == list(ids), family
            renders[name] = {
                "text": text,
                "ids": list(ids),
                "addSpecialTokensPrepends": with_special_tokens[:prepended],
            }
        families[family] = renders
    reference = {
        "generator": f"transformers {transformers.__version__}, tokenizers {tokenizers.__version__}",
        "now": PINNED_NOW.isoformat(),
        "conversations": {
            name: {"messages": messages, "addGenerationPrompt": add_generation_prompt}
            for name, (messages, add_generation_prompt) in CONVERSATIONS.items()
        },
        "families": families,
    }
    text = json.dumps(reference, ensure_ascii=False, indent=1)
    # One line per list of ids.
    print(re.sub(r"\[[\d,\s]*\]", lambda m: re.sub(r"\s+", "", m.group(0)), text))


if __name__ == "__main__":
    main()
