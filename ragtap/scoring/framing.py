"""Framing: the parts of an answer that are about the answer or the documents, not about the world.

"Based on the provided passages, here is how to grill pork chops:", "Here's a summary of the news in 49 words:",
"as described in passage 3", "The passage discusses ..." assert nothing the documents could support or contradict;
judged as claims, their words are missing from the documents and "3" or "49" become missing numbers, so clean
answers of strong models (which frame more) were flagged.  Two cases:

- a whole sentence of framing (an introduction to what follows, ending in ':', or announcing "several things" to
  keep in mind; a sentence about the summary, the passage or the answer itself) is not judged;
- a framing *prefix* ("Based on the passage, ...", "According to the document, ...", "The article reports that ...",
  "In summary, ...") and *references to the context* ("(passage 3)", "[2]", "as described in document 1") are cut
  out, and the rest of the sentence is judged as the claim.

The patterns look for the vocabulary of texts about texts (passage, document, context, article, summary...), so a
sentence about the world is never taken for framing.
"""

from __future__ import annotations

import re

_TEXT_NOUN = r"(?:passages?|documents?|docs?|context|texts?|articles?|news(?: article| story| report)?|stor(?:y|ies)|reports?|excerpts?|snippets?|sources?|information|content|manual|provided (?:material|data)|extracts?|paragraphs?|sections?|results?)"
_THE = r"(?:the|this|these|those|our|your|my|its|each)"
_GIVEN = r"(?:(?:provided|given|supplied|retrieved|above|available|following|attached|referenced|original|cited|relevant|search)\s+)*"

# Prefixes whose rest is the claim: "Based on the provided passages, ...", "According to the article, ..."
_PREFIX = re.compile(
    rf"""^\s*(?:
        (?:based|relying|drawing)\s+(?:solely\s+|only\s+|entirely\s+|purely\s+)?(?:up)?on\s+{_THE}\s+{_GIVEN}{_TEXT_NOUN}[^,:]{{0,60}}?[,:]
      | (?:according\s+to|as\s+(?:stated|described|mentioned|explained|noted|shown|indicated|outlined|reported)\s+in|per|from|in)\s+{_THE}\s+{_GIVEN}{_TEXT_NOUN}(?:\s+\#?\d+)?\s*,
      | (?:in\s+(?:summary|short|conclusion|brief)|to\s+summari[sz]e|overall|in\s+a\s+nutshell)\s*[,:]
      | {_THE}\s+{_GIVEN}{_TEXT_NOUN}\s+(?:\#?\d+\s+)?(?:also\s+)?(?:says|states|explains|describes|discusses|mentions|notes|reports|indicates|suggests|highlights|covers|reveals|shows|tells\s+us|is\s+about|focuses\s+on|provides\s+information\s+(?:about|on)|talks\s+about|details|outlines)(?:\s+that)?\s*,?
    )\s*""",
    re.IGNORECASE | re.VERBOSE,
)
# A reference to the context inside a sentence: "(passage 3)", "[2]", "as described in document 1", "(see source 2)".
_REFERENCE = re.compile(
    rf"""\s*(?:
        \[\s*\d{{1,3}}(?:\s*[,-]\s*\d{{1,3}})*\s*\]
      | \(\s*(?:see\s+|cf\.?\s+|from\s+|in\s+)?{_GIVEN}{_TEXT_NOUN}\s*\#?\d{{1,3}}(?:\s*(?:,|and|&)\s*\#?\d{{1,3}})*\s*\)
      | ,?\s*(?:as\s+(?:stated|described|mentioned|explained|noted|shown|indicated|outlined)\s+)?(?:in|from|see|per)\s+{_THE}?\s*{_GIVEN}{_TEXT_NOUN}\s*\#?\d{{1,3}}\b
    )""",
    re.IGNORECASE | re.VERBOSE,
)
# Whole sentences about the answer or the documents.
_WHOLE = (
    # "Here is a summary of the news in 49 words:", "Below are the steps:", "Sure! Here's what I found."
    re.compile(r"^\s*(?:sure|certainly|of course|okay|ok)?[!,.]?\s*(?:here\s+(?:is|are)|here's|below\s+(?:is|are)|the\s+following\s+(?:is|are))\b", re.I),
    # "The summary highlights that ...", "This summary covers ..."
    re.compile(r"^\s*(?:this|the|my|in\s+this|in\s+the)\s+(?:summary|answer|response|overview|recap)\b", re.I),
    # "I hope this helps", "Let me know if ..."
    re.compile(r"^\s*(?:i\s+hope\s+this|let\s+me\s+know|feel\s+free\s+to|i\s+can\s+(?:help|provide)|please\s+note\s+that\s+(?:this|the)\s+(?:summary|answer))", re.I),
    # "It's important to note that the passage ...", "Note that the article does not ..."
    re.compile(rf"^\s*(?:it(?:'s|’s| is)\s+(?:important|worth)\s+(?:to\s+)?not(?:e|ing)\s+that\s+|note\s+that\s+|however,\s+)?{_THE}\s+{_GIVEN}{_TEXT_NOUN}\s+(?:does\s+not|doesn't|do\s+not|don't|appears?|seems?|is\s+(?:a|an)\b|are\s+(?:a|an)\b|contains?|includes?|consists?)", re.I),
)
# A list's announcement: "Yes, there are several things to keep in mind when loading the roof rack." -- what follows
# is the list; the sentence names no member ("including ...", "such as ..." and a colon make it a claim or an
# introduction, judged or cut as such) and no count ("three ways" can be wrong).
_ANNOUNCED = re.compile(
    r"^\s*(?:(?:yes|sure|certainly)[,!.]?\s+)?there\s+(?:are|is)\s+(?:several|a\s+few|some|many|various|a\s+number\s+of|multiple)\s+"
    r"(?:\w+\s+)?(?:things|tips|hints|ways|steps|points|factors|options|precautions|considerations|methods|recommendations|guidelines|instructions)\b"
    r"(?![^.!?]*\b(?:including|such\s+as|like|namely|e\.g)\b)[^,:;]*[.!]?\s*$",
    re.IGNORECASE,
)
_WORDS_IN = re.compile(r"\b(?:in|within|under|of)\s+(?:about\s+|around\s+|exactly\s+)?\d{1,4}\s+words\b", re.I)


def whole_sentence_framing(claim: str) -> bool:
    """True when the whole claim is about the answer or the documents (never judged)."""
    text = claim.strip()
    if any(p.search(text) for p in _WHOLE) or _WORDS_IN.search(text) or _ANNOUNCED.match(text):
        return True
    # An introduction to what follows: "To change a tire, follow these steps:" (a restatement of the question).
    return text.endswith(":") and len(text.split()) <= 30


def framing_cut(claim: str) -> list[tuple[int, int]]:
    """The character ranges of `claim` that are framing (a prefix, references to the context), in order."""
    cuts: list[tuple[int, int]] = []
    prefix = _PREFIX.match(claim)
    if prefix is not None and prefix.end() < len(claim):
        cuts.append((0, prefix.end()))
    for match in _REFERENCE.finditer(claim, cuts[0][1] if cuts else 0):
        cuts.append(match.span())
    return cuts
