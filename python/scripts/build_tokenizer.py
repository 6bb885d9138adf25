"""Builds the bundled tiny tokenizer offline: a byte-level BPE with Qwen2's pre-tokenizer, trained with `tokenizers`
on text generated here (arithmetic questions, tool calls, chat turns) and the calculator example's questions, plus
a Qwen2-style ChatML chat template.

Output: arclight_torch/assets/tokenizer/{tokenizer.json, tokenizer_config.json} (committed as a fixture; rerun this
script only to change it). Usage: python scripts/build_tokenizer.py [--vocab 512]
"""

import argparse
import json
import random
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

# Qwen2's pre-tokenizer (transformers' Qwen2Tokenizer rebuilds exactly this when it loads a qwen2 model folder, so a
# checkpoint saved from `new:qwen2-tiny` reloads with the same ids): digits split one by one, then byte-level.
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]
ASSETS = Path(__file__).resolve().parents[1] / "arclight_torch" / "assets" / "tokenizer"

# Qwen2.5's template, shortened for a context of a few hundred tokens: the same turn structure (`<|im_start|>role\n
# ... <|im_end|>\n`), tools as JSON lines inside <tools></tools> in the system turn, assistant tool calls as
# `<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>` and tool results as <tool_response> in a user turn.
CHAT_TEMPLATE = (
    "{%- if tools %}{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] + '\\n' }}{%- endif %}"
    "{{- '<tools>' }}{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}"
    "{{- '\\n</tools><|im_end|>\\n' }}"
    "{%- elif messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message.role == 'user' or (message.role == 'assistant' and not message.tool_calls) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + (message.content or '') + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}{{- '<|im_start|>assistant' }}"
    "{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}"
    "{%- for tool_call in message.tool_calls %}"
    "{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}"
    "{{- '\\n<tool_call>\\n{\"name\": \"' + tool_call.name + '\", \"arguments\": ' }}"
    "{%- if tool_call.arguments is string %}{{- tool_call.arguments }}"
    "{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}{%- endfor %}{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if loop.index0 == 0 or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred plus minus times "
    "divided by what is the answer result calculate compute use tool call number final question"
).split()


def corpus(lines: int, seed: int) -> list[str]:
    """Arithmetic questions, tool calls and chat turns, the text the calculator demo sends."""
    rng = random.Random(seed)
    out: list[str] = []
    for _ in range(lines):
        a, b, c = rng.randint(0, 99), rng.randint(1, 99), rng.randint(0, 99)
        op = rng.choice("+-*/")
        expr = f"({a}{op}{b})*{c}" if rng.random() < 0.3 else f"{a}{op}{b}"
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
        call = json.dumps({"name": "calculator", "arguments": {"expression": expr}})
        out += [
            f"user\nWhat is {expr}? {words}",
            f"assistant\n<tool_call>\n{call}\n</tool_call>",
            f"user\n<tool_response>\n{eval(expr.replace('/', '//')) if b else 0}\n</tool_response>",
            f"assistant\nThe answer is {a + c}.",
        ]
    return out


def calculator_questions() -> list[str]:
    """The calculator example's training questions (examples/calculator/data/train.jsonl), when present."""
    path = Path(__file__).resolve().parents[2] / "examples" / "calculator" / "data" / "train.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line)["question"] for line in path.read_text().splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vocab", type=int, default=512, help="vocabulary size (ids), specials included")
    parser.add_argument("--out", type=Path, default=ASSETS)
    args = parser.parse_args()
    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=args.vocab,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(4000, seed=0) + calculator_questions(), trainer=trainer)
    args.out.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(args.out / "tokenizer.json"))
    config = {
        "tokenizer_class": "Qwen2Tokenizer",
        "model_max_length": 512,
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "clean_up_tokenization_spaces": False,
        "chat_template": CHAT_TEMPLATE,
    }
    (args.out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    print(f"wrote {args.out} (vocab {tokenizer.get_vocab_size()})")


if __name__ == "__main__":
    main()
