import json, sys, time
from hss_gate.common.inputs import load_corpus
from hss_gate.research.likelihood import load_scorer
from hss_gate.research.sentence_attribution import agreement
from hss_gate.models.sentence_explainer import SentenceAttributionSettings, explain_sentences
from hss_gate.research.sentence_fidelity import SELF_SEED
from hss_gate.settings import load_settings
from hss_gate.models.summarizers import load_summarizer
src = sys.argv[1]
r = json.load(open(src)); row = r["per_document"][0]
s = load_settings("params.yaml")
doc = next(d for d in load_corpus(s.run.corpus) if d.doc_id == row["doc_id"])
summary = load_summarizer(r["model"], s).summarize([doc.text])[0]
scorer = load_scorer(r["model"], s, s.experiment.attribution_backend, s.experiment.attribution_dtype)
seed = r["settings"]["seed"]
again = explain_sentences(scorer, doc.text, summary, SentenceAttributionSettings(method="kernel", budget=row["reference"]["budget"], seed=SELF_SEED + seed, max_words=s.generate.max_input_words, segments=False))
import numpy as np
print(row["doc_id"], "self_spearman", agreement(np.array(row["reference"]["values"]), again.values), again.evaluations, again.seconds, flush=True)
