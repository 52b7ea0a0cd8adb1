"""The gate as JUnit XML, which CI systems show as tests (`hss gate --junit`)."""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import quoteattr

from hss_gate.decision.record import Decision, Finding
from hss_gate.decision.reports.sections import observed

JUNIT_SIGNALS = {
    "consistency": "consistency",
    "unsupported_entities": "unsupported_entities",
    "hss": "hss.rise",
}
"""The paired signals JUnit shows as tests: test name -> the code of the finding that fails it."""


def decision_junit(decision: Decision) -> str:
    """The gate as JUnit XML, which CI systems show as tests: one test per suite check and per
    deciding signal (consistency, unsupported entities, HSS); a test fails when a finding with
    its code blocked the decision, an error is one erroring test, an override is a passing test
    that says who and why. Reads the findings' codes, never their text."""
    cases: list[str] = []

    def case(classname: str, name: str, failure: str | None = None, kind: str = "failure") -> None:
        head = f"<testcase classname={quoteattr(classname)} name={quoteattr(name)}"
        if failure is None:
            cases.append(head + "/>")
        else:
            cases.append(f"{head}><{kind} message={quoteattr(failure)}/></testcase>")

    if decision.decision == "error":
        case("hss-gate", "decision", decision.reasons[0], kind="error")
    blocked = _blocking(decision.findings)
    not_measured = decision.metrics.get("hss_not_measured")
    for name, code in JUNIT_SIGNALS.items():
        if name == "hss" and not_measured:
            case("hss-gate.signals", name, not_measured, kind="skipped")
            continue
        finding = next((f for f in blocked if f.code == code), None)
        case("hss-gate.signals", name, finding.text if finding else None)
    failed_checks = {f.check for f in blocked if f.check}
    for check in decision.checks:
        where = f"{check['table']}.{check['name']}"
        message = f"{check['description']} (observed {observed(check)})"
        failed = not check["success"] and where in failed_checks
        case(f"hss-gate.checks.{check['kind']}", check["name"], message if failed else None)
    if decision.override:
        case("hss-gate", f"override by {decision.override['by']}: {decision.override['reason']}")
    failures = sum("<failure" in c for c in cases)
    errors = sum("<error" in c for c in cases)
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        f"<testsuite name={quoteattr('hss-gate: ' + decision.candidate)} tests='{len(cases)}' "
        f"failures='{failures}' errors='{errors}'>\n" + "\n".join(cases) + "\n</testsuite>\n"
    )


def _blocking(findings: Sequence[Finding]) -> list[Finding]:
    """The findings that blocked the decision (none once a person overrode the block)."""
    return [f for f in findings if f.effect == "block"]
