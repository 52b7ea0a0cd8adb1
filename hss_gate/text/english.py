"""Is a text in English? The script of its letters and the share of English function words.

The pipeline's models (spaCy, GloVe, WordNet, SBERT) are English-only: a source or a summary in
another language is flagged, not scored as if it were English (pure).
"""

from __future__ import annotations

import re

# Frequent function words of English and of six other languages (words that are also common in
# English, such as "a", "in" or "an", are left out of the second list). On ~1,200 English
# documents (the reference corpus, QAGS CNN/DM, SummaC's SummEval, FactCC, legal and RCT subsets)
# English ones are 22-48% of the words and the others never outnumber them; on the same news
# text in German, French, Spanish, Italian, Dutch and Portuguese English ones are 0-9%.
ENGLISH_FUNCTION_WORDS = frozenset(
    """the of and to in is was that for on with as by at from it be are has have had this an a
    which were its their not or but he she they his her been will would said who also after than
    there more can one about into when all we i you our other some such these up out if no so
    what only over most may could should do did new first two""".split()  # noqa: SIM905
)
OTHER_FUNCTION_WORDS = frozenset(
    """der die das und ist nicht ein eine einen zu den von mit sich des auf für dem im nach wird
    sind auch dass hat wurde werden bei aus oder wie aber
    le les et est une des du que qui dans pour pas au sur aux ce cette sont avec par
    el los las y es una del por con para se lo como más pero su sus
    il che di della delle degli per non sono nel nella gli alla
    het een en van dat op te niet zijn voor met ook
    os um uma não com mais seu sua ao pelo pela""".split()  # noqa: SIM905
)
MIN_ENGLISH_SHARE = 0.10
_LETTERS = re.compile(r"[^\W\d_]+")


def looks_non_english(text: str, min_words: int = 20) -> bool:
    """True for text mostly in another script or, over min_words words, with few English
    function words or more of other languages'. The pipeline's models are English-only."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return False
    if sum(c.isascii() for c in letters) < 0.5 * len(letters):
        return True
    words = [w.lower() for w in _LETTERS.findall(text)]
    if len(words) < min_words:
        return False
    english = sum(w in ENGLISH_FUNCTION_WORDS for w in words)
    other = sum(w in OTHER_FUNCTION_WORDS for w in words)
    return english < MIN_ENGLISH_SHARE * len(words) or other > english
