"""Documents whose text lost words on the way in (a PDF or OCR extraction, a decoder that dropped tokens).

Such text still says what it says, but it cannot witness what it does not say: where "never attempt to climb a hill
on an angle" came out as "attempt to climb a hill on an angle", a faithful claim with the "never" looks like a
flipped negation.  DelucionQA's contexts lost about 14% of their words this way, negations among them: 3 of the 8
claims called contradicted in its dev set's clean answers were of that kind (6 of 39 on train).  So polarity.py does not call a claim
contradicted for a negation its evidence lacks when the evidence's document shows the marks of lost words; a
negation the evidence *has* is still compared (what survived extraction was written).

The marks are what edited prose does not contain: an article, a possessive or "if" right before a comma or a full
stop ("remove the support rod from the, and"), a conjunction before a full stop ("could result in serious injury
or."), two commas with nothing between them, an article followed by a verb or another article ("the will be", "the
of"), a requirement that lost its state ("the driver door must be.").  A document counts when it has at least
`MIN_MARKS` of them and `LOSSY_RATE` per sentence: 60 of DelucionQA dev's 151 distinct contexts do (248 of train's
666), none of RAGTruth's 150 news articles, FaithBench's 75 sources or WikiEval's 50 pages.
"""

from __future__ import annotations

import functools
import re

# Lower-case only: "And, according to ..." opens a sentence in edited prose.
_MARKS = re.compile(
    r"\b(?-i:the|a|an|your|their|its|our|if)\s*[,.;:](?![\dm]\.?)"
    r"|\b(?-i:and|or)\s*[.;:]"  # "and, in summer, ..." is prose; "... or." is not
    r"|,\s*,"
    r"|\b(?-i:must|will|can|may|shall)\s+be\s*[.,;:](?!\d)"  # "the driver door must be." ("should not be." is an ellipsis)
    r"|\b(?-i:the|a|an)\s+(?-i:the|a|an|is|are|was|were|to|of|and|or|be|should)\b"
)
_SENTENCE_END = re.compile(r"[.!?;](?:\s|$)")

LOSSY_RATE = 0.1  # marks per sentence
MIN_MARKS = 2  # one slip is a typo


@functools.lru_cache(maxsize=4096)
def lost_words(text: str) -> bool:
    """The text shows the marks of words lost in extraction (cached: documents recur across requests)."""
    marks = len(_MARKS.findall(text))
    if marks < MIN_MARKS:
        return False
    sentences = max(1, len(_SENTENCE_END.findall(text)))
    return marks / sentences >= LOSSY_RATE
