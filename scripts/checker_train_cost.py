"""What each checker capacity costs to train and to run on this machine (issue 54, item 2).

    PYTHONPATH=. .venv/bin/python scripts/checker_train_cost.py [--mpnet DIR] [--steps 6]

Side by side in one run, on the same batches (16 pairs of a 230-token premise and a 24-token
claim, padded to `checker.max_length`, the trainer's batch size): today's LoRA on the embedded
MiniLM-L6, full fine-tuning of MiniLM-L6, and with `--mpnet` (a folder holding all-mpnet-base-v2:
config, tokenizer, model.safetensors) full fine-tuning of MPNet-base. Prints seconds per
training step (forward, backward, AdamW; the first step is a warm-up, not counted), seconds per
scored pair (inference, no gradient), and the hours a recipe of N pairs and E epochs would take.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

WORDS = [
    "the",
    "council",
    "said",
    "on",
    "monday",
    "that",
    "the",
    "new",
    "budget",
    "would",
    "repair",
    "roads",
    "schools",
    "and",
    "bridges",
    "across",
    "the",
    "region",
    "while",
    "the",
    "mayor",
    "warned",
    "that",
    "costs",
    "could",
    "rise",
    "next",
    "year",
]


def _texts(n: int, words: int, offset: int) -> list[str]:
    return [" ".join(WORDS[(i + j + offset) % len(WORDS)] for j in range(words)) for i in range(n)]


def _full_model(base_dir: str) -> tuple[object, object]:
    from torch import nn
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    encoder = AutoModel.from_pretrained(base_dir, add_pooling_layer=False)

    class CrossEncoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder
            self.head = nn.Linear(encoder.config.hidden_size, 2)

        def forward(self, **inputs: object) -> object:
            return self.head(self.encoder(**inputs).last_hidden_state[:, 0])

    return tokenizer, CrossEncoder()


def _lora_model() -> tuple[object, object]:
    from hss_gate.consistency.entailment import (
        AdapterConfig,
        build_cross_encoder,
        embedded_base_dir,
    )

    return build_cross_encoder(embedded_base_dir(), AdapterConfig())


def measure(name: str, tokenizer, model, steps: int, max_length: int, batch: int) -> dict:
    """Seconds per training step and per scored pair of one capacity."""
    import torch

    premises, claims = _texts(batch, 170, 0), _texts(batch, 18, 7)
    inputs = tokenizer(
        premises,
        claims,
        truncation="only_first",
        max_length=max_length,
        padding="max_length",
        return_tensors="pt",
    )
    labels = torch.tensor([i % 2 for i in range(batch)])
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-5)
    model.train()
    took = []
    for _ in range(steps + 1):
        start = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(model(**inputs), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        took.append(time.perf_counter() - start)
    model.eval()
    with torch.no_grad():
        start = time.perf_counter()
        for _ in range(2):
            model(**inputs)
        infer = (time.perf_counter() - start) / (2 * batch)
    step = sum(took[1:]) / steps
    return {
        "capacity": name,
        "trainable_parameters": sum(p.numel() for p in trainable),
        "s_per_step": round(step, 3),
        "s_per_pair_trained": round(step / batch, 4),
        "s_per_pair_scored": round(infer, 4),
    }


def main() -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mpnet", type=Path, help="a folder holding all-mpnet-base-v2")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=3800, help="a recipe's pairs, for hours")
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    from hss_gate.consistency.entailment import embedded_base_dir

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    capacities = [
        ("lora-minilm-l6 (today)", _lora_model),
        ("full-minilm-l6", lambda: _full_model(str(embedded_base_dir()))),
    ]
    if args.mpnet:
        capacities.append(("full-mpnet-base", lambda: _full_model(str(args.mpnet))))
    for name, build in capacities:
        tokenizer, model = build()
        row = measure(name, tokenizer, model, args.steps, args.max_length, args.batch)
        hours = row["s_per_pair_trained"] * args.pairs * args.epochs / 3600
        row[f"hours_for_{args.pairs}_pairs_x{args.epochs}"] = round(hours, 2)
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
