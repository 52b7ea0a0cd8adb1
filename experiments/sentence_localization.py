"""Sentence-level localization for reading: which source sentences moved behind each changed
summary sentence (issue 26, item 4).

    python experiments/sentence_localization.py [DOCUMENTS] [PER_SENTENCE] [MODEL]

DOCUMENTS: the first N reference documents (default 1), or doc ids separated by commas
(e.g. the six of docs/EXPERIMENT.md's word-level hand check). For each, MODEL (default
gguf:smollm2-135m-instruct) summarizes the document and its first perturbation (the weakest
band); the perturbed summary's swaps are restored; the base summary's log-likelihood, one
target per summary sentence, is explained by permutation SHAP over the source sentences of the
document and of the perturbation (PER_SENTENCE x M evaluations each, default 2, the same seed),
and the report lists, per changed summary sentence, the source sentences whose attribution moved
most, beside the source sentences the perturbation actually touched. The hand check (does the
moved sentence explain the change?) is the reader's.
"""

from __future__ import annotations

import sys
import time

from hss_gate.common.cache import Cache
from hss_gate.common.inputs import load_corpus
from hss_gate.models.sentence_explainer import SentenceAttributionSettings
from hss_gate.models.summarizers import load_summarizer
from hss_gate.research.likelihood import load_scorer
from hss_gate.research.sentence_attribution import explain_change
from hss_gate.research.sentence_fidelity import budget_for
from hss_gate.scoring.pipeline import make_perturbations
from hss_gate.scoring.toolkit import real_toolkit
from hss_gate.settings import load_settings
from hss_gate.text.masked_text import sentence_features
from hss_gate.text.swap_back import swap_back


def main() -> None:
    chosen_docs = sys.argv[1] if len(sys.argv) > 1 else "1"
    per_sentence = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    model = sys.argv[3] if len(sys.argv) > 3 else "gguf:smollm2-135m-instruct"
    settings = load_settings("params.yaml")
    exp = settings.experiment
    if chosen_docs.isdigit():
        docs = load_corpus(settings.run.corpus, limit=int(chosen_docs))
    else:
        wanted = chosen_docs.split(",")
        by_id = {d.doc_id: d for d in load_corpus(settings.run.corpus)}
        missing = [w for w in wanted if w not in by_id]
        if missing:
            sys.exit(f"not in the reference corpus: {', '.join(missing)}")
        docs = [by_id[w] for w in wanted]
    made = make_perturbations(docs, settings, real_toolkit(settings), Cache(None))
    chosen = {d.doc_id: sorted(made[d.doc_id], key=lambda p: p.index)[0] for d in docs}
    summarizer = load_summarizer(model, settings)
    texts = [t for d in docs for t in (d.text, chosen[d.doc_id].text)]
    summaries = summarizer.summarize(texts)
    scorer = load_scorer(model, settings, exp.attribution_backend, exp.attribution_dtype)
    for i, doc in enumerate(docs):
        p = chosen[doc.doc_id]
        base, other = summaries[2 * i], summaries[2 * i + 1]
        restored = swap_back(other, p.swaps, doc.text)
        m = sentence_features(doc.text).n
        budget = budget_for(m, per_sentence)
        started = time.perf_counter()
        change = explain_change(
            scorer,
            doc.text,
            p.text,
            base,
            restored,
            SentenceAttributionSettings(
                budget=budget,
                seed=settings.perturb.seed,
                max_words=settings.generate.max_input_words,
            ),
        )
        seconds = time.perf_counter() - started
        print(
            f"\n== {doc.doc_id}: {m} sentences, swaps {p.swaps}, budget {budget}, {seconds:.0f} s"
        )
        print(f"base summary: {base}\nperturbed summary (swaps restored): {restored}")
        print(change.report(), flush=True)


if __name__ == "__main__":
    main()
