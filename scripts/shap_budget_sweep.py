"""Spearman of SHAP word attributions at small budgets against shap's default (500 evaluations).

    python scripts/shap_budget_sweep.py [WORDS] [MODEL]   # BENCHMARKS.md, "Targets missed"

The first reference document, cut to WORDS words (0 = the whole document, the default), is
summarized by MODEL (default gguf:smollm2-135m-instruct); the attributions explain that summary's
log-likelihood with the experiment's scorer settings (backend, dtype). Evaluations are shared
through an in-memory cache, so the sweep costs little more than the default explanation.
"""

import sys

from hss_gate.common.cache import Cache
from hss_gate.common.inputs import load_corpus
from hss_gate.models.summarizers import load_summarizer
from hss_gate.models.summarizers.base import truncate_words
from hss_gate.research.attribution import AttributionSettings, shap_attribution
from hss_gate.research.likelihood import CachedLikelihood, load_scorer
from hss_gate.scoring.instability_metrics import spearman
from hss_gate.settings import load_settings


def main() -> None:
    words = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    model = sys.argv[2] if len(sys.argv) > 2 else "gguf:smollm2-135m-instruct"
    settings = load_settings("params.yaml")
    exp = settings.experiment
    doc = load_corpus(settings.run.corpus, limit=1)[0]
    text = truncate_words(doc.text, words) if words else doc.text
    summary = load_summarizer(model, settings).summarize([text])[0]
    scorer = CachedLikelihood(
        load_scorer(model, settings, exp.attribution_backend, exp.attribution_dtype), Cache(None)
    )
    seed = settings.perturb.seed
    default = shap_attribution(
        scorer,
        text,
        summary,
        AttributionSettings(shap_max_evals=500, shap_fixed_context=None, seed=seed),
    )
    print(f"default: {default.evaluations} evaluations, {default.seconds:.1f} s")
    print("words evaluations fixed_context seconds spearman")
    for budget in (16, 32, 64, 100):
        for context in (1, None):
            ours = shap_attribution(
                scorer,
                text,
                summary,
                AttributionSettings(shap_max_evals=budget, shap_fixed_context=context, seed=seed),
            )
            rho = spearman(ours.values, default.values)
            n = len(text.split())
            print(n, ours.evaluations, context, f"{ours.seconds:.1f}", f"{rho:.3f}", flush=True)


if __name__ == "__main__":
    main()
