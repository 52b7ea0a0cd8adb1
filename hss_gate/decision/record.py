"""A gate decision as a record: `Decision` (decision.json), its coded `Finding`s, an override
by a person and the fail-closed error (pure). The rule that makes a decision is
hss_gate.decision.rule; the paired comparison it reads, hss_gate.decision.paired_comparison.
Reports,
JUnit and users' CI read the findings' codes, never the English text."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from hss_gate.common.errors import InputError

EXIT_CODES = {"promote": 0, "block": 1, "error": 2}
SCHEMA_VERSION = "3"  # of decision.json and monitor.json: 2 added schema_version and findings;
# 3: a facts check observes the lower end of its interval, given beside it (`interval`)


# the codes of the findings that do not come from a check (those have the check's code)
FINDING_CODES = {
    "consistency": "consistency fell significantly beyond gate.consistency_margin",
    "unsupported_entities": "unsupported entities/numbers rose beyond gate.unsupported_margin",
    "hss.rise": "HSS rose significantly beyond gate.margin",
    "drift": "the score distributions drifted from production",
    "hss.rewriting": "HSS read beside the rewriting (novel n-gram share)",
    "hss.paraphrase": "an HSS rise that looks like paraphrase, not factual error",
    "hss.not_measured": "HSS not measured (no perturbed summaries): its comparison and checks "
    "are skipped, the facts and form decide",
    "categories.too_small": "categories with fewer than gate.min_category_documents documents",
    "within_margins": "promoted: nothing blocked",
    "production.restored": "how production's summaries were obtained (the workflow)",
    "length.target": "the summary length the near-empty and overlong checks judge against, and "
    "where it came from (the workflow)",
    "documents.dropped": "stored summaries: documents without both summaries, dropped from "
    "the pairing, and summaries of doc_ids not in the corpus (the workflow)",
    "sequential.documents": "how many documents and looks decided (the workflow)",
    "sequential.plan": "gate.looks beyond the corpus: the looks that were planned (the workflow)",
    "hss.subset": "facts first: HSS measured on the first documents of the looks only "
    "(gate.hss_documents), with the number it rests on (the workflow)",
    "facts.relative": "the facts bounds follow production's own values on the same documents",
    "override": "a person overrode a block",
    "error": "the gate could not decide",
}


Effect = Literal["block", "advisory", "note", "promote", "error", "override", "overridden"]
REASON_EFFECTS = ("block", "promote", "error", "override", "overridden")


class Finding(BaseModel):
    """One reason or note of a decision: its stable code, the deciding signal it is about (a
    `decided_by` value), what it did to the decision, and its text. `check` names the check
    it comes from (table.name), if any."""

    code: str
    signal: str
    effect: Effect
    text: str
    check: str | None = None

    @property
    def is_reason(self) -> bool:
        """A reason (the decision's why) rather than a note (read with it)."""
        return self.effect in REASON_EFFECTS


class Decision(BaseModel):
    """decision.json: the contract the CI workflow and reviewers read. `reasons` and `notes`
    are the English texts of `findings`, which carry their codes."""

    schema_version: str = SCHEMA_VERSION
    decision: Literal["promote", "block", "error"]
    reasons: list[str]
    metrics: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    checks: list[dict[str, Any]] = Field(default_factory=list)
    drift: dict[str, Any] | None = None
    decided_by: list[str] = Field(default_factory=list)
    override: dict[str, Any] | None = None
    candidate: str = ""
    production: str = ""
    checker: str = ""
    created: str = ""
    hss_gate_version: str = ""

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.decision]

    def add_note(self, code: str, text: str, signal: str = "") -> None:
        """Append a note (and its finding)."""
        self.notes.append(text)
        self.findings.append(Finding(code=code, signal=signal, effect="note", text=text))


def texts_of(findings: Sequence[Finding]) -> dict[str, list[str]]:
    """The reasons and notes of findings, as a Decision keeps them."""
    return {
        "reasons": [f.text for f in findings if f.is_reason],
        "notes": [f.text for f in findings if not f.is_reason],
    }


def apply_override(decision: Decision, by: str, reason: str) -> Decision:
    """A human's recorded override of a block: the candidate is promoted, and the record keeps
    who overrode it, why, and what the gate had found. An error is never overridden (the gate
    could not decide, so there is nothing to override)."""
    if not by.strip() or not reason.strip():
        raise InputError("an override needs who (--override-by) and why (--override-reason)")
    if decision.decision != "block":
        return decision
    record = {
        "by": by.strip(),
        "reason": reason.strip(),
        "blocked_by": list(decision.decided_by),
        "blocked_reasons": list(decision.reasons),
    }
    text = f"block overridden by {record['by']}: {record['reason']}"
    findings = [Finding(code="override", signal="override", effect="override", text=text)]
    findings += [
        f.model_copy(update={"effect": "overridden", "text": f"(the gate had blocked: {f.text})"})
        if f.is_reason
        else f
        for f in _findings_of(decision)
    ]
    return decision.model_copy(
        update={
            "decision": "promote",
            "reasons": texts_of(findings)["reasons"],
            "findings": findings,
            "decided_by": ["override"],
            "override": record,
        }
    )


def _findings_of(decision: Decision) -> list[Finding]:
    """A decision's findings; one made without them (e.g. by hand) gets uncoded ones."""
    if decision.findings:
        return list(decision.findings)
    effect: Effect = "block" if decision.decision == "block" else "promote"
    return [Finding(code="", signal="", effect=effect, text=r) for r in decision.reasons] + [
        Finding(code="", signal="", effect="note", text=n) for n in decision.notes
    ]


def error_decision(message: str, **context: Any) -> Decision:
    """The fail-closed decision when any step could not run."""
    text = f"could not decide: {message}"
    finding = Finding(code="error", signal="error", effect="error", text=text)
    return Decision(decision="error", reasons=[text], findings=[finding], **context)
