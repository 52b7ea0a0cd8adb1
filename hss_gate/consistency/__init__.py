"""The factual-consistency checker: does the source support what a summary says?

- checker.py: the checker decisions use (`load_checker`: SummaC-ZS over SBERT or FactCC
  sentence scores), one `Verdict` per (source, summary);
- verdict.py: the checker's finding on one summary (`Verdict`, `Unsupported`), a plain record;
- features.py: tokens, names, numbers, overlap and the (premise, claim) feature vector;
- model.py: the consistency models behind one protocol (factcc, sbert, hf: NLI), their weights;
- training.py: synthetic training claims from text that is not evaluation data, and training;
- aggregation.py: sentence matrix -> one score (SummaC-ZS, SummaC-Conv);
- calibration.py: AUC, balanced accuracy and thresholds chosen on labelled data;
- scorer.py: every comparator column for (document, summary) pairs (`hss factuality`);
- entailment.py, entailment_data.py, entailment_training.py: the trained entailment checker;
- entail_checker.py: the `entail` checker's sentence matrix (source chunks SBERT picks, each
  cross-encoded with the summary sentence), the adapter's sha256 check and lazy load;
- entail_release.py: the shipped adapter's path, pinned sha256 and threshold;
- judge.py: the `judge:` checker, an LLM behind an OpenAI-compatible endpoint asked about each
  claim against the same evidence (P(yes) from log-probabilities), its answers cached;
- novelty.py: word-level novelty of a summary against its source (stems, numbers, rarity);
- invented.py: the `invented` checker over those features (weights: invented_weights.json);
- lm_contrast.py: per-token likelihood contrast with / without the source (measured, not used).
"""
