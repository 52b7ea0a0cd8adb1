"""`hss init [FOLDER]`: what a user repository needs to gate its own summarizer.

It writes params.yaml (the production model and corpus, `schema_version`, the installed
`hss_gate_version`), dvc.yaml (the baseline's stages on the user's corpus; their code dependency
is that version, not this repository's sources; no attribution stage for a production model
without token likelihoods), a corpus template (two example documents and the format's rules),
`.github/workflows/hss-gate.yml` (calls the action at the repository root, action.yml),
`.gitignore` lines and a README section. It never overwrites: an existing file is skipped and
named, lines and sections already present are not added again, so a second run changes nothing.
Every check runs before anything is written, and the files are written all or none.

The texts are pure functions of the request (`plan`); `run_init` reads the folder, checks and
writes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import yaml

from hss_gate.common.errors import HssError, InputError, ModelError
from hss_gate.common.io import write_texts_atomic
from hss_gate.settings import SCHEMA_VERSION, is_project

EMBEDDED_CORPUS = "data/reference"
"""run.corpus when none is given: the reference corpus the installed package carries."""
BASELINE_DIR = "data/baseline"
LIKELIHOOD_SCHEMES = ("gguf", "hf")
"""Production models whose token likelihoods the attribution stage teacher-forces."""
ACTION_REPOSITORY = "hss-gate/hss-gate"
"""The repository whose action.yml the generated workflow calls (`--action` names another)."""
TEMPLATE_DIR = "corpus-template"
WORKFLOW = ".github/workflows/hss-gate.yml"
README_MARKER = "<!-- hss-gate: written by hss init -->"
GITIGNORE = (".hss/", "outputs/")


@dataclass(frozen=True)
class InitRequest:
    """What `hss init` was asked for (paths relative to `folder` unless absolute)."""

    folder: Path
    production: str
    corpus: str | None  # None: the embedded reference corpus
    version: str  # the installed hss-gate
    params: str = "params.yaml"
    action: str | None = None  # owner/repo@ref of the action (None: ACTION_REPOSITORY@v<version>)


@dataclass(frozen=True)
class Planned:
    """One file: created, appended to, or skipped (and why)."""

    path: str
    mode: Literal["create", "append", "skip"]
    text: str = ""
    why: str = ""


@dataclass
class InitResult:
    """What a run did, file by file."""

    created: list[str] = field(default_factory=list)
    appended: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    def lines(self) -> list[str]:
        """One line a file, for the console."""
        out = [f"wrote {path}" for path in self.created]
        out += [f"added to {path}" for path in self.appended]
        out += [f"skipped {path}: {why}" for path, why in self.skipped]
        return out


def has_likelihoods(uri: str) -> bool:
    """Does the model give token likelihoods (the attribution stage needs them)?"""
    return uri.partition(":")[0] in LIKELIHOOD_SCHEMES


def params_text(request: InitRequest) -> str:
    """The user's params.yaml: only what differs from the installed package's defaults."""
    corpus = request.corpus or EMBEDDED_CORPUS
    note = (
        "the installed package's reference corpus (none here)"
        if request.corpus is None
        else "JSONL file or folder of JSONL files (corpus-template/README.md)"
    )
    return (
        "# hss-gate settings (written by `hss init`). A key not here keeps the installed\n"
        "# package's default (`hss_gate/_packaged/params.yaml` of hss-gate); any key can be\n"
        "# overridden by an environment variable HSS_<SECTION>__<KEY>.\n"
        f"schema_version: {SCHEMA_VERSION}                        # this file's layout\n"
        f"hss_gate_version: {_scalar(request.version)}"
        "                 # the baseline's code: dvc.yaml depends on it\n"
        "run:\n"
        f"  production_model: {_scalar(request.production)}\n"
        f"  corpus: {_scalar(corpus)}  # {note}\n"
        f"  baseline_dir: {BASELINE_DIR}           # `hss baseline` / `dvc repro` write it\n"
    )


def dvc_text(request: InitRequest) -> str:
    """dvc.yaml: the baseline's stages on the user's corpus; the code dependency is the
    installed version (params `hss_gate_version`), not hss-gate's source files."""
    params_file = request.params
    options = "" if params_file == "params.yaml" else f" --params {params_file}"
    out = f" --out {BASELINE_DIR}"

    def params(*keys: str) -> list[object]:
        return [{params_file: ["hss_gate_version", *keys]}]

    corpus_deps = [] if request.corpus is None else [request.corpus]
    stages: dict[str, object] = {
        "scores": {
            "cmd": f"hss baseline --stage scores{out}{options}",
            **({"deps": corpus_deps} if corpus_deps else {}),
            "params": params("run.production_model", "run.corpus"),
            "outs": [{f"{BASELINE_DIR}/reference": {"cache": False, "persist": True}}],
        },
        "constants": {
            "cmd": f"hss baseline --stage constants{out}{options}",
            "deps": [
                f"{BASELINE_DIR}/reference/perturbations.csv",
                f"{BASELINE_DIR}/reference/summary.json",
            ],
            "params": params(),
            "outs": [{f"{BASELINE_DIR}/normalization.json": {"cache": False}}],
        },
        "metrics": {
            "cmd": f"hss baseline --stage metrics{out}{options}",
            "deps": [
                f"{BASELINE_DIR}/reference/documents.csv",
                f"{BASELINE_DIR}/reference/perturbations.csv",
                f"{BASELINE_DIR}/normalization.json",
            ],
            "params": params(),
            "outs": [{f"{BASELINE_DIR}/production_scores.csv": {"cache": False}}],
            "metrics": [{f"{BASELINE_DIR}/metrics.json": {"cache": False}}],
        },
    }
    if has_likelihoods(request.production):
        stages["attribution"] = {
            "cmd": f"hss baseline --stage attribution{out}{options}",
            "deps": [
                *corpus_deps,
                f"{BASELINE_DIR}/reference/summaries.jsonl",
                f"{BASELINE_DIR}/reference/edits.jsonl",
            ],
            "params": params("run.production_model"),
            "outs": [{f"{BASELINE_DIR}/attribution.jsonl": {"cache": False}}],
        }
    header = (
        "# The production baseline (written by `hss init`): `dvc repro` reruns a stage when its\n"
        "# corpus, production model or hss-gate version changes. Settings of the packaged\n"
        "# defaults you set in params.yaml (perturb, generate, score, consistency) are not\n"
        "# tracked until you add them to the stage's params. The outputs are small and reviewed\n"
        "# in pull requests, so they stay in git (cache: false); hss-gate's docs/REFERENCE.md:\n"
        "# moving them to a remote.\n"
    )
    return header + yaml.safe_dump({"stages": stages}, sort_keys=False, width=100)


def workflow_text(request: InitRequest) -> str:
    """.github/workflows/hss-gate.yml: the gate on pull requests and on demand, via the action."""
    action = request.action or f"{ACTION_REPOSITORY}@v{request.version}"
    return f"""# hss-gate: blocks a change when the candidate summarizer's summaries are less
# supported by their sources than production's (written by `hss init`; edit freely). The
# candidate is the repository variable HSS_CANDIDATE on pull requests, or the input of a manual
# run; production and the corpus are those of {request.params}.
name: hss-gate

on:
  pull_request:
  workflow_dispatch:
    inputs:
      candidate:
        description: "Candidate model URI (gguf:, hf:, extractive:, openai:, summaries:)"
        required: true
        type: string
      limit:
        description: "Score only the first N documents (empty: all)"
        required: false
        type: string
        default: ""

permissions: {{}}

jobs:
  gate:
    runs-on: ubuntu-latest
    timeout-minutes: 120
    permissions:
      contents: read
      pull-requests: write  # the decision comment (read-only on pull requests from forks)
    steps:
      - uses: actions/checkout@v5
        with:
          persist-credentials: false
      - uses: {action}
        with:
          candidate: ${{{{ inputs.candidate || vars.HSS_CANDIDATE }}}}
          params: {_scalar(request.params)}
          limit: ${{{{ inputs.limit }}}}
"""


TEMPLATE_DOCUMENTS = (
    {
        "doc_id": "example-01",
        "category": "notices",
        "title": "Library opening hours change",
        "text": "The city library will open at 9 a.m. instead of 10 a.m. from 1 June. "
        "It will close at 6 p.m. on weekdays and at 4 p.m. on Saturdays.\n\nThe library "
        "said more people use the reading room in the morning. Sunday opening stays the same.",
    },
    {
        "doc_id": "example-02",
        "category": "notices",
        "title": "New bus line to the hospital",
        "text": "A new bus line, number 27, will connect the train station with the regional "
        "hospital from 3 March. Buses will run every 20 minutes between 6 a.m. and 10 p.m.\n\n"
        "The transport company said the trip will take about 15 minutes. Tickets cost the "
        "same as on other city lines.",
    },
)

TEMPLATE_README = """# The corpus format

hss-gate reads a corpus from a JSON Lines file (`.jsonl`, UTF-8, one JSON object a line) or from
a folder of them (every `*.jsonl` inside, in name order). `documents.jsonl` here holds two
examples: replace them with documents of your own and point `run.corpus` in params.yaml here
(or run `hss init --corpus PATH` in a fresh folder).

Fields of a document:
- `doc_id` (required): unique in the corpus; it keys the cache and the stored baseline.
- `text` (required; `document` is accepted instead): the source the summarizer reads. Longer
  than `generate.max_input_words` words (1500) it is truncated, with a warning.
- `category` (optional): documents of a category share a normalization constant; the gate
  looks at categories in turn. Without one, every document is in `uncategorized` (one stratum).
- `tier` and `title` (optional): reported only.
Any other field is refused (a misspelt field would silently default).

How many: 6 documents are enough to try it; the gate's sequential rule usually settles after 12,
and a category is checked on its own with 5 or more.
"""


def readme_text(request: InitRequest) -> str:
    """The README section that says how this repository gates its summarizer."""
    options = "" if request.params == "params.yaml" else f" --params {request.params}"
    return f"""
{README_MARKER}
## Summary quality gate (hss-gate)

Candidate summarizers are gated against production (`{request.production}`) on the corpus in
`{request.corpus or "the package's reference corpus"}` ({request.params}):

```
pip install hss-gate            # version {request.version}
hss baseline{options}           # or `dvc repro`: production's baseline, data/baseline/
hss gate --candidate URI{options}   # 0 promote, 1 block, 2 could not decide
```

Commit `data/baseline/` after the baseline changes. On GitHub, `{WORKFLOW}` runs the gate on pull
requests (the candidate is the repository variable `HSS_CANDIDATE`) and on demand.
"""


def gitignore_missing(existing: str | None) -> list[str]:
    """The .gitignore lines (outputs and caches) not yet in the file."""
    present = {line.strip() for line in (existing or "").splitlines()}
    return [line for line in GITIGNORE if line not in present and line.rstrip("/") not in present]


def plan(request: InitRequest, existing: Mapping[str, str | None]) -> list[Planned]:
    """The files to write, given the folder's existing ones (relative path -> text or None)."""
    files = {
        request.params: params_text(request),
        "dvc.yaml": dvc_text(request),
        f"{TEMPLATE_DIR}/documents.jsonl": "".join(
            json.dumps(doc, ensure_ascii=False) + "\n" for doc in TEMPLATE_DOCUMENTS
        ),
        f"{TEMPLATE_DIR}/README.md": TEMPLATE_README,
        WORKFLOW: workflow_text(request),
    }
    planned = [
        Planned(path, "skip", why="exists, left as it is")
        if existing.get(path) is not None
        else Planned(path, "create", text)
        for path, text in files.items()
    ]
    gitignore = existing.get(".gitignore")
    missing = gitignore_missing(gitignore)
    if not missing:
        planned.append(Planned(".gitignore", "skip", why="has the lines already"))
    else:
        block = "\n# hss-gate: caches and reports\n" + "".join(f"{line}\n" for line in missing)
        if gitignore is None:
            planned.append(Planned(".gitignore", "create", block.lstrip("\n")))
        else:
            sep = "" if not gitignore or gitignore.endswith("\n") else "\n"
            planned.append(Planned(".gitignore", "append", gitignore + sep + block))
    readme = existing.get("README.md")
    if readme is not None and README_MARKER in readme:
        planned.append(Planned("README.md", "skip", why="has the hss-gate section already"))
    elif readme is None:
        planned.append(Planned("README.md", "create", readme_text(request).lstrip("\n")))
    else:
        sep = "" if not readme or readme.endswith("\n") else "\n"
        planned.append(Planned("README.md", "append", readme + sep + readme_text(request)))
    return planned


def check_params(path: str, text: str | None) -> None:
    """An existing params file must be hss-gate's: another tool's is never touched."""
    if text is None:
        return
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{path}: invalid YAML, left alone ({type(exc).__name__})") from exc
    if not isinstance(data, dict) or not is_project(data):
        raise InputError(
            f"{path} exists and has no hss-gate section (another tool's?): left alone; "
            "give hss-gate a file of its own: hss init --params hss-gate.yaml"
        )


def check_model_uri(uri: str, folder: Path) -> None:
    """A production URI that does not parse, names no model or no file: a ModelError. Cheap:
    nothing is loaded or downloaded (the model may be installed after `hss init`)."""
    from hss_gate.common.redact import redacted_uri
    from hss_gate.models import model_store
    from hss_gate.models.summarizers import SCHEMES, load_summarizer
    from hss_gate.models.summarizers.stored import SummariesSource
    from hss_gate.settings import HssSettings

    scheme, sep, target = uri.partition(":")
    if redacted_uri(uri) != uri:
        raise ModelError("carries a credential: give it through the environment instead")
    if not sep or not target or scheme not in SCHEMES:
        raise ModelError(f"expected one of {', '.join(f'{s}:<...>' for s in SCHEMES)}")
    if scheme == "extractive":
        load_summarizer(uri, HssSettings())  # lead-N, centroid-N: nothing to load yet
    elif scheme == "summaries":
        source = SummariesSource.from_target(target)
        path = source.path if source.path.is_absolute() else folder / source.path
        if not path.exists():
            raise ModelError(f"{source.path}: no such file in {folder}")
    elif scheme == "gguf":
        path = Path(target).expanduser()
        if path.suffix == ".gguf" or path.exists():
            if not (path if path.is_absolute() else folder / path).is_file():
                raise ModelError(f"{target}: GGUF file not found")
        elif model_store.resolve_name(target).kind != "gguf":
            raise ModelError(f"'{target}' is not a GGUF summarizer")
    elif scheme == "openai" and not target.startswith(("http://", "https://")):
        raise ModelError("expected openai:<http(s) base URL of the server>")


def run_init(
    request: InitRequest,
    check_production: Callable[[str], None],
    check_corpus: Callable[[Path], None],
) -> InitResult:
    """Check the request, then write the planned files (all or none). `check_production` and
    `check_corpus` raise an HssError for a model URI that does not load or a bad corpus."""
    folder = request.folder
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder}: not a folder")
    names = [
        request.params,
        "dvc.yaml",
        f"{TEMPLATE_DIR}/documents.jsonl",
        f"{TEMPLATE_DIR}/README.md",
        WORKFLOW,
        ".gitignore",
        "README.md",
    ]
    existing = {name: _read(folder / name) for name in names}
    check_params(request.params, existing[request.params])
    if request.corpus is not None:
        corpus = Path(request.corpus)
        where = corpus if corpus.is_absolute() else folder / corpus
        if where.exists():
            check_corpus(where)
        elif not _is_template(where, folder):  # the template this run writes: ours, it loads
            raise InputError(f"--corpus {request.corpus}: no such file or folder in {folder}")
    try:
        check_production(request.production)
    except HssError as exc:
        raise InputError(f"--production {request.production}: {exc}") from exc
    result = InitResult()
    writes: dict[Path, str] = {}
    for item in plan(request, existing):
        if item.mode == "skip":
            result.skipped.append((item.path, item.why))
            continue
        writes[folder / item.path] = item.text
        (result.created if item.mode == "create" else result.appended).append(item.path)
    write_texts_atomic(writes)
    return result


def _is_template(corpus: Path, folder: Path) -> bool:
    """Is the corpus the template `hss init` writes (its folder or its documents file)? Then it
    need not exist yet: `hss init --corpus corpus-template` works on the first run."""
    template = (folder / TEMPLATE_DIR).resolve()
    return corpus.resolve() in (template, template / "documents.jsonl")


def _read(path: Path) -> str | None:
    if not path.exists():
        return None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc})") from exc


def _scalar(value: str) -> str:
    """A YAML scalar for a one-line value (quoted when plain YAML would change it)."""
    dumped = yaml.safe_dump(value, default_flow_style=True, width=10_000).strip()
    return dumped.removesuffix("\n...").removesuffix("...").strip()
