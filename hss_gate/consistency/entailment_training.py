"""Fine-tuning the entailment cross-encoder's adapter on CPU: deterministic for a seed and a
thread count, checkpointed every `checkpoint_every` steps and resumed from the newest checkpoint.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hss_gate.common.progress import Progress, no_progress
from hss_gate.consistency.entailment import (
    AdapterConfig,
    adapter_tensors,
    build_cross_encoder,
    load_adapter,
    load_merged,
    marked_claim,
    read_adapter_config,
    save_adapter,
)
from hss_gate.consistency.entailment_data import Pair


@dataclass(frozen=True)
class TrainSettings:
    """The optimisation's settings (params.yaml `checker.train`)."""

    seed: int = 13
    epochs: int = 1
    batch_size: int = 16
    learning_rate: float = 5e-4
    warmup_share: float = 0.06
    weight_decay: float = 0.01
    threads: int = 2
    checkpoint_every: int = 200
    pair_margin: float = 0.0  # weight of the ranking loss between a seed's two labels (0: none)


def pair_groups(pairs: Sequence[Pair]) -> list[int]:
    """Each pair's group: the pairs that share a premise and a source (a seed claim's supported
    and unsupported versions, `entailment_data.seed_pairs`) share a group number."""
    numbers: dict[tuple[str, str], int] = {}
    return [numbers.setdefault((p.premise, p.source), len(numbers)) for p in pairs]


def batches(pairs: Sequence[Pair], settings: TrainSettings, epoch: int) -> list[list[int]]:
    """Index batches of one epoch: groups (`pair_groups`) shuffled by seed and epoch, then
    ordered by length in runs of 50 batches so that a batch pads little; a group is never split
    across batches (the order stays a function of the seed)."""
    rng = random.Random(settings.seed * 1000 + epoch)
    members: dict[int, list[int]] = {}
    for i, g in enumerate(pair_groups(pairs)):
        members.setdefault(g, []).append(i)
    groups = list(members.values())
    rng.shuffle(groups)
    run = settings.batch_size * 50
    out: list[list[int]] = []
    start = 0
    while start < len(groups):
        taken, size = [], 0
        while start < len(groups) and size < run:
            taken.append(groups[start])
            size += len(groups[start])
            start += 1
        taken.sort(key=lambda g: len(pairs[g[0]].premise) + len(pairs[g[0]].hypothesis))
        batch: list[int] = []
        chunk: list[list[int]] = []
        for group in taken:
            if batch and len(batch) + len(group) > settings.batch_size:
                chunk.append(batch)
                batch = []
            batch = batch + group
        if batch:
            chunk.append(batch)
        rng.shuffle(chunk)
        out.extend(chunk)
    return out


def ranking_loss(logits: Any, labels: Any, groups: Any) -> Any:
    """Mean softplus(1 - (z_supported - z_unsupported)) over the (supported, unsupported) pairs
    of one group in the batch, z = logit(supported) - logit(not); 0 when there is none."""
    import torch

    z = logits[:, 1] - logits[:, 0]
    same = groups[:, None] == groups[None, :]
    ordered = (labels[:, None] == 1) & (labels[None, :] == 0) & same
    if not bool(ordered.any()):
        return z.sum() * 0.0
    gap = z[:, None] - z[None, :]
    return torch.nn.functional.softplus(1.0 - gap[ordered]).mean()


def train_adapter(
    pairs: Sequence[Pair],
    base_dir: str | Path,
    config: AdapterConfig,
    settings: TrainSettings,
    out: str | Path,
    checkpoint_dir: str | Path,
    progress: Progress = no_progress,
    init: str | Path | None = None,
) -> dict[str, Any]:
    """Train the adapter on `pairs` (starting from the adapter file `init`, when given: a
    second stage), write it to `out`; returns the training log."""
    import torch

    torch.set_num_threads(settings.threads)
    torch.manual_seed(settings.seed)
    tokenizer, model = build_cross_encoder(base_dir, config)
    if init is not None and config.rank == 0 and read_adapter_config(init).rank != 0:
        load_merged(model, base_dir, init)  # full fine-tuning from a LoRA adapter
    elif init is not None:
        load_adapter(model, init)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = _adamw(model, settings)
    plan = [batches(pairs, settings, e) for e in range(settings.epochs)]
    total = sum(len(p) for p in plan)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _schedule(total, settings))
    checkpoint = Path(checkpoint_dir) / "checkpoint.safetensors"
    step, losses = _resume(checkpoint, model, optimizer, settings, config, len(pairs))
    for _ in range(step):
        scheduler.step()
    advance = progress("train checker", total, step)
    labels = torch.tensor([p.label for p in pairs])
    groups = torch.tensor(pair_groups(pairs))
    claims = [
        marked_claim(p.premise, p.hypothesis) if config.marks else p.hypothesis for p in pairs
    ]
    model.train()
    for idx in [batch for epoch in plan for batch in epoch][step:]:  # resumed: the rest only
        inputs = tokenizer(
            [pairs[i].premise for i in idx],
            [claims[i] for i in idx],
            truncation="longest_first",
            max_length=config.max_length,
            padding=True,
            return_tensors="pt",
        )
        loss = _loss(model(**inputs), labels[idx], groups[idx], settings)
        _descend(loss, params, optimizer, scheduler)
        losses.append(round(loss.item(), 5))
        step += 1
        if step % settings.checkpoint_every == 0 or step == total:
            _save_checkpoint(
                checkpoint, model, optimizer, step, losses, settings, config, len(pairs)
            )
        advance(1)
    model.eval()
    save_adapter(model, config, out)
    return _write_log(out, step, len(pairs), settings, config, losses)


def _adamw(model: Any, settings: TrainSettings) -> Any:
    """AdamW over the trainable parameters, with weight decay on all but the biases."""
    import torch

    decay = [p for n, p in model.named_parameters() if p.requires_grad and not n.endswith("bias")]
    no_decay = [p for n, p in model.named_parameters() if p.requires_grad and n.endswith("bias")]
    return torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": settings.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=settings.learning_rate,
    )


def _schedule(total: int, settings: TrainSettings) -> Callable[[int], float]:
    """The learning rate's factor at each step: a linear warm-up over the first
    `warmup_share` of the `total` steps, then a linear decay to 0."""
    warmup = max(1, int(total * settings.warmup_share))

    def rate(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))

    return rate


def _loss(logits: Any, labels: Any, groups: Any, settings: TrainSettings) -> Any:
    """The batch's cross-entropy, plus `pair_margin` times its ranking loss."""
    import torch

    loss = torch.nn.functional.cross_entropy(logits, labels)
    if settings.pair_margin:
        loss = loss + settings.pair_margin * ranking_loss(logits, labels, groups)
    return loss


def _descend(loss: Any, params: list[Any], optimizer: Any, scheduler: Any) -> None:
    """One optimisation step down the loss: gradients clipped to norm 1, the learning rate
    advanced, the gradients cleared."""
    import torch

    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()


def _write_log(
    out: str | Path,
    steps: int,
    n_pairs: int,
    settings: TrainSettings,
    config: AdapterConfig,
    losses: Sequence[float],
) -> dict[str, Any]:
    """The training log, written beside the adapter (`<out>.log.json`)."""
    log = {
        "steps": steps,
        "pairs": n_pairs,
        "settings": asdict(settings),
        "config": asdict(config),
        "loss_by_tenth": _tenths(losses),
    }
    Path(out).with_suffix(".log.json").write_text(json.dumps(log, indent=1) + "\n")
    return log


def _tenths(losses: Sequence[float]) -> list[float]:
    if not losses:
        return []
    n = max(1, len(losses) // 10)
    return [
        round(sum(losses[k : k + n]) / len(losses[k : k + n]), 4) for k in range(0, len(losses), n)
    ]


def _identity(settings: TrainSettings, config: AdapterConfig, n_pairs: int) -> dict[str, Any]:
    return {"settings": asdict(settings), "config": asdict(config), "n_pairs": n_pairs}


def _save_checkpoint(
    path: Path,
    model: Any,
    optimizer: Any,
    step: int,
    losses: list[float],
    settings: TrainSettings,
    config: AdapterConfig,
    n_pairs: int,
) -> None:
    """Adapter, optimizer moments and RNG as safetensors (no pickle); the rest as JSON."""
    import torch
    from safetensors.torch import save_file

    tensors = {f"model.{n}": t for n, t in adapter_tensors(model).items()}
    state = optimizer.state_dict()
    for index, moments in state["state"].items():
        for name, value in moments.items():
            tensors[f"optimizer.{index}.{name}"] = torch.as_tensor(value).clone()
    tensors["torch_rng"] = torch.get_rng_state()
    meta = _identity(settings, config, n_pairs) | {
        "step": step,
        "losses": losses,
        "param_groups": state["param_groups"],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    save_file(tensors, str(tmp), metadata={"state": json.dumps(meta)})
    tmp.replace(path)


def _resume(
    path: Path,
    model: Any,
    optimizer: Any,
    settings: TrainSettings,
    config: AdapterConfig,
    n_pairs: int,
) -> tuple[int, list[float]]:
    """Load the newest checkpoint of the same run (settings, config, data size); (0, []) when
    there is none or it belongs to another run."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import load_file

    if not path.is_file():
        return 0, []
    with safe_open(str(path), framework="pt") as f:
        meta = json.loads((f.metadata() or {}).get("state", "{}"))
    if {k: meta.get(k) for k in ("settings", "config", "n_pairs")} != json.loads(
        json.dumps(_identity(settings, config, n_pairs))
    ):
        return 0, []
    tensors = load_file(str(path))
    model.load_state_dict(
        {n[len("model.") :]: t for n, t in tensors.items() if n.startswith("model.")}, strict=False
    )
    moments: dict[int, dict[str, Any]] = {}
    for name, value in tensors.items():
        if name.startswith("optimizer."):
            _, index, key = name.split(".", 2)
            moments.setdefault(int(index), {})[key] = value
    optimizer.load_state_dict({"state": moments, "param_groups": meta["param_groups"]})
    torch.set_rng_state(tensors["torch_rng"])
    return int(meta["step"]), list(meta["losses"])
