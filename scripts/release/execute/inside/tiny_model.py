"""Runs inside a vLLM CPU build's venv: writes a tiny random Llama checkpoint the way
transformers saves one (``config.json``, ``model.safetensors``, a tokenizer trained on
a few lines), small enough to start in a minute on two cores.

    python tiny_model.py FOLDER

Hidden 128, 2 layers, 4 heads, 2 KV heads (head size 32: vLLM's CPU attention needs
32 or more), vocabulary 1024; seeded, so every run writes the same weights.
"""

from __future__ import annotations

import sys
from pathlib import Path

WORDS = (
    "the quick brown fox jumps over the lazy dog while kernels compile and caches warm "
    "vllm serves a tiny llama on a cpu so the compile cache key can be read from a start"
)


def main(folder: str) -> None:
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=1024,
        max_position_embeddings=512,
        torch_dtype="bfloat16",
    )
    LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=1024, special_tokens=["<unk>", "<s>", "</s>"])
    tokenizer.train_from_iterator([WORDS] * 8, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )
    fast.save_pretrained(out)


if __name__ == "__main__":
    main(sys.argv[1])
