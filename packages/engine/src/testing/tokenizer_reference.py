"""Reference tokenizations from Hugging Face transformers, for tokenizer.test.ts and examples.test.ts.

Reads a tokenizer folder written by writeTestTokenizer(dir, {merges: 150}) and prints JSON:
  - texts: each text's ids (add_special_tokens=False) and its decoding;
  - conversations: the rendered ChatML text, its ids and the assistant token mask that
    transformers computes from a {% generation %}-tagged copy of the same template.

Regenerate (needs transformers and jinja2 for /usr/bin/python3):
  npx tsc -b packages/engine
  node -e 'import("./packages/engine/dist/src/testing/test-tokenizer.js").then((m) => m.writeTestTokenizer("/tmp/svc-ref-tok", { merges: 150 }))'
  python3 packages/engine/src/testing/tokenizer_reference.py /tmp/svc-ref-tok > packages/engine/src/testing/fixtures/hf-tokenizer-reference.json
"""

import json
import sys

import tokenizers
import transformers
from transformers import AutoTokenizer

TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog. 12345 67",
    "héllo wörld — café déjà vu",
    "日本語のテキスト、中文，한국어",
    "emoji: 🙂🚀👩‍👩‍👧 and flags 🇫🇷",
    "  leading and trailing spaces  ",
    "tabs\tand\nnewlines\r\n\n\nblank lines",
    "it's they're we'll I'd",
    "The assistant replies politely: the answer is yes, thank you for asking.",
    "a<|im_end|>b<|im_start|>user\n",
    "   \n\n  x",
]

CONVERSATIONS = [
    [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "It is 4."},
        {"role": "user", "content": "And 3+3?"},
        {"role": "assistant", "content": "6, of course 🙂"},
    ],
    [
        {"role": "user", "content": "Say hi"},
        {"role": "assistant", "content": " hi there\n\n"},
    ],
    [
        {"role": "user", "content": "weather in 2024?"},
        {"role": "assistant", "content": "\n\nlet me check: 21°C"},
        {"role": "tool", "content": '{"temp": 21}'},
        {"role": "assistant", "content": "It's 21 degrees, thank you for asking."},
    ],
]

# The same ChatML the test tokenizer writes, with each assistant content and its
# <|im_end|> inside {% generation %} so transformers reports which tokens they are.
GENERATION_CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['role'] == 'assistant' %}"
    "{% generation %}{{ message['content'] + '<|im_end|>' }}{% endgeneration %}"
    "{% else %}{{ message['content'] + '<|im_end|>' }}{% endif %}"
    "{{ '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def main() -> None:
    tokenizer = AutoTokenizer.from_pretrained(sys.argv[1])
    texts = []
    for text in TEXTS:
        ids = tokenizer.encode(text, add_special_tokens=False)
        texts.append({"text": text, "ids": ids, "decoded": tokenizer.decode(ids)})
    conversations = []
    for messages in CONVERSATIONS:
        rendered = tokenizer.apply_chat_template(messages, tokenize=False)
        tagged = tokenizer.apply_chat_template(
            messages,
            chat_template=GENERATION_CHATML,
            tokenize=True,
            return_dict=True,
            return_assistant_tokens_mask=True,
        )
        conversations.append(
            {
                "messages": messages,
                "text": rendered,
                "ids": list(tagged["input_ids"]),
                "assistantMask": list(tagged["assistant_masks"]),
            }
        )
    reference = {
        "generator": f"transformers {transformers.__version__}, tokenizers {tokenizers.__version__}",
        "merges": 150,
        "vocabSize": len(tokenizer),
        "eosTokenId": tokenizer.eos_token_id,
        "texts": texts,
        "conversations": conversations,
    }
    print(json.dumps(reference, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
