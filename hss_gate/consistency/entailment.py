"""A trained entailment cross-encoder: P(the premise supports the hypothesis).

The encoder is the embedded all-MiniLM-L6-v2 (BERT, 6 layers, 384 wide), read as a cross-encoder
("[CLS] premise [SEP] hypothesis [SEP]"). Training changes only small parts of it: low-rank
adapters (LoRA) beside every linear layer of every block and a two-way head on the [CLS] vector.
Those tensors are the *adapter*: a few MB of safetensors with the settings in its metadata,
shipped in git and sha256-verified before load; the base weights stay the pinned package's.
Rank 0 trains every encoder weight instead (full fine-tuning; the file then holds the whole
encoder, about 90 MB: measured on folds, not shipped).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hss_gate.common.errors import ModelError
from hss_gate.common.library_logs import TRANSFORMERS_LOADING, known_messages, load_report_rows

ADAPTER_FORMAT = "hss-entailment-lora-v1"
LORA_TARGETS = (
    "attention.self.query",
    "attention.self.key",
    "attention.self.value",
    "attention.output.dense",
    "intermediate.dense",
    "output.dense",
)


@dataclass(frozen=True)
class AdapterConfig:
    """What the adapter's tensors mean; stored in the adapter file's metadata."""

    rank: int = 16
    alpha: float = 32.0
    max_length: int = 256
    base: str = "all-minilm-l6-v2"
    lower_case: bool = True  # the base tokenizer is uncased: recorded, not a choice
    marks: bool = False  # the claim's words the premise lacks are marked (`marked_claim`)

    def to_json(self) -> str:
        return json.dumps({"format": ADAPTER_FORMAT, **asdict(self)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> AdapterConfig:
        data = json.loads(text)
        if data.pop("format", None) != ADAPTER_FORMAT:
            raise ModelError(f"not an {ADAPTER_FORMAT} adapter")
        return cls(**data)


MARK_OPEN, MARK_CLOSE = "[", "]"


def marked_claim(premise: str, claim: str) -> str:
    """The claim with each content word, name and number the premise does not contain (stems
    and normalized numbers, `novelty.words`) put between brackets: where the encoder should
    look ("Ann asks [Sarah] to buy butter")."""
    from hss_gate.consistency.novelty import Source, supported, words

    source = Source(premise, [premise])
    out, at = [], 0
    for word in words(claim):
        if word.content and not supported(word, source.keys, source.prefixes):
            out += [claim[at : word.start], MARK_OPEN, claim[word.start : word.end], MARK_CLOSE]
            at = word.end
    return "".join(out) + claim[at:]


def _lora_linear(base: Any, rank: int, alpha: float) -> Any:
    import torch
    from torch import nn

    class LoRALinear(nn.Module):
        """y = base(x) + (alpha / rank) * B(A(x)); the base stays frozen."""

        def __init__(self) -> None:
            super().__init__()
            self.base = base
            self.scale = alpha / rank
            self.lora_a = nn.Parameter(torch.empty(rank, base.in_features))
            self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
            nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))

        def forward(self, x: Any) -> Any:
            return self.base(x) + (x @ self.lora_a.T @ self.lora_b.T) * self.scale

    return LoRALinear()


def unused_pooler_report(message: str) -> bool:
    """Whether `message` is transformers' load report of an encoder built without its pooler
    (add_pooling_layer=False): its only rows are the checkpoint's pooler weights, which the
    cross-encoder does not use (it reads the [CLS] vector), marked UNEXPECTED. Understood and
    harmless; any other row (a missing or mismatched weight) makes it a report to show."""
    rows = load_report_rows(message)
    return bool(rows) and all(
        key.startswith("pooler.") and status == "UNEXPECTED" for key, status in rows or ()
    )


def build_cross_encoder(base_dir: str | Path, config: AdapterConfig) -> tuple[Any, Any]:
    """(tokenizer, model) with fresh adapters; the base weights frozen (rank 0: no adapter,
    every encoder weight trained: full fine-tuning). The model maps tokenizer output to two
    logits (not supported, supported)."""
    from torch import nn
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    # its "Loading weights" bar is noise in logs, as for SBERT (hss_gate/models/embedding.py)
    transformers_logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(str(base_dir))
    with known_messages(TRANSFORMERS_LOADING, unused_pooler_report):
        encoder = AutoModel.from_pretrained(str(base_dir), add_pooling_layer=False)
    for p in encoder.parameters():
        p.requires_grad_(config.rank == 0)
    for name, module in list(encoder.named_modules()) if config.rank else []:
        for target in LORA_TARGETS:
            if name.endswith(target) and isinstance(module, nn.Linear):
                parent_name, _, child = name.rpartition(".")
                setattr(
                    encoder.get_submodule(parent_name),
                    child,
                    _lora_linear(module, config.rank, config.alpha),
                )

    class CrossEncoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder
            self.dropout = nn.Dropout(0.1)
            self.head = nn.Linear(encoder.config.hidden_size, 2)

        def forward(self, **inputs: Any) -> Any:
            hidden = self.encoder(**inputs).last_hidden_state[:, 0]
            return self.head(self.dropout(hidden))

    model = CrossEncoder()  # fresh tensors drawn from torch's RNG: training seeds it first
    model.eval()
    return tokenizer, model


def adapter_tensors(model: Any) -> dict[str, Any]:
    """The trained tensors (adapters and head), contiguous, in a fixed order."""
    return {
        name: p.detach().contiguous().clone()
        for name, p in sorted(model.named_parameters())
        if p.requires_grad
    }


def save_adapter(model: Any, config: AdapterConfig, path: str | Path) -> None:
    """Write the adapter (safetensors, fp32, settings in the metadata) atomically."""
    from safetensors.torch import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    save_file(adapter_tensors(model), str(tmp), metadata={"config": config.to_json()})
    tmp.replace(path)


def load_adapter(model: Any, path: str | Path) -> None:
    """Put an adapter's tensors into a model built with the same config."""
    from safetensors.torch import load_file

    tensors = load_file(str(path))
    expected = set(adapter_tensors(model))
    missing, extra = expected - set(tensors), set(tensors) - expected
    if missing:
        raise ModelError(
            f"{path}: adapter lacks {sorted(missing)[0]} (and {len(missing) - 1} more)"
        )
    if extra:
        raise ModelError(
            f"{path}: adapter has {sorted(extra)[0]} (and {len(extra) - 1} more) that the "
            "model does not"
        )
    try:
        model.load_state_dict(tensors, strict=False)
    except RuntimeError as exc:  # a tensor of another shape: another rank or base
        first = str(exc).strip().splitlines()[-1].strip()
        raise ModelError(f"{path}: adapter does not fit the model ({first})") from exc


def load_merged(model: Any, base_dir: str | Path, path: str | Path) -> None:
    """Put a LoRA adapter file into a fully trained model (rank 0): the adapter is read into a
    model of its own config, merged into its base layers, and every weight copied over."""
    _, lora = build_cross_encoder(base_dir, read_adapter_config(path))
    load_adapter(lora, path)
    model.load_state_dict(merge_adapters(lora).state_dict())


def merge_adapters(model: Any) -> Any:
    """Fold every LoRA adapter into its base layer (W + scale * B A) for inference: one matmul
    per layer instead of three, the same scores up to float rounding. Training needs them apart."""
    import torch
    from torch import nn

    with torch.no_grad():
        for name, module in list(model.named_modules()):
            if not hasattr(module, "lora_a"):
                continue
            base = module.base
            merged = nn.Linear(base.in_features, base.out_features, bias=base.bias is not None)
            merged.weight.copy_(base.weight + module.scale * (module.lora_b @ module.lora_a))
            if base.bias is not None:
                merged.bias.copy_(base.bias)
            parent_name, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent_name), child, merged)
    model.eval()
    return model


def read_adapter_config(path: str | Path) -> AdapterConfig:
    """The settings stored in an adapter file's metadata."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata() or {}
    if "config" not in meta:
        raise ModelError(f"{path}: no adapter settings in the file's metadata")
    return AdapterConfig.from_json(meta["config"])


def embedded_base_dir() -> Path:
    """The embedded all-MiniLM-L6-v2's folder (config, tokenizer, weights), sha256-verified."""
    from hss_gate.models import model_store

    model = model_store.resolve_name("all-minilm-l6-v2")
    problems = model_store.verify(model)
    if problems:
        raise ModelError(
            "the entail checker's base encoder failed verification: " + "; ".join(problems)
        )
    return model_store.weight_paths(model)[0].parent


class EntailmentModel:
    """P(supported) of (premise, hypothesis) pairs with a loaded cross-encoder."""

    def __init__(
        self,
        tokenizer: Any,
        model: Any,
        config: AdapterConfig,
        fingerprint: str,
        batch_size: int = 16,
    ) -> None:
        self.tokenizer, self.model, self.config = tokenizer, model, config
        self.fingerprint, self.batch_size = fingerprint, batch_size

    def scores(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        import torch

        if len(premises) != len(hypotheses):
            raise ValueError(f"{len(premises)} premises but {len(hypotheses)} hypotheses")
        out = np.zeros(len(premises), dtype=float)
        # longest first, so each batch pads little
        order = sorted(range(len(premises)), key=lambda i: -len(premises[i]) - len(hypotheses[i]))
        self.model.eval()
        with torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                claims = [
                    marked_claim(premises[i], hypotheses[i]) if self.config.marks else hypotheses[i]
                    for i in idx
                ]
                batch = self.tokenizer(
                    [premises[i] for i in idx],
                    claims,
                    # as in training: the longer side is cut first, so a long premise loses
                    # its tail and a hypothesis longer than the context never raises
                    truncation="longest_first",
                    max_length=self.config.max_length,
                    padding=True,
                    return_tensors="pt",
                )
                probs = torch.softmax(self.model(**batch), dim=-1)[:, 1]
                out[idx] = probs.double().numpy()
        return out
