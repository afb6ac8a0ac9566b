"""Names: a claim that names someone or something other than its aligned evidence does (conflicts.py calls it).

A name is what a fluent wrong answer most easily gets wrong while keeping every other word: "Tesla designed the
motor" where the sentence says Bláthy did.  Each check compares the claim with the evidence window it rests on
(alignment.py), never with the documents at large, and needs the evidence's own name in the place of the claim's.
"""

from __future__ import annotations

import re

from ragtap.scoring.alignment import Window
from ragtap.scoring.lexical import (
    STOPWORDS,
    DocumentVocabulary,
    content_words,
    name_in,
    name_or_short_form_in,
    names,
    tokens,
    undotted_titles,
    with_long_forms,
)
from ragtap.scoring.sentences import STOP_BREAK
from ragtap.scoring.words import MONTHS, WEEKDAYS, stem


def name_conflicts(claim: str, best: Window, vocabulary: DocumentVocabulary) -> list[str]:
    """A substituted name, in three forms.

    1. A name the documents lack, standing where the evidence names another ("Tesla designed the motor" where the
       sentence says Bláthy designed it).  "Where": a content word next to the claim's name (within `_NEAR` words)
       stands next to the evidence's name too.  The claim's first word counts here, since the evidence's own name is
       there to compare with.  Not a word of a longer name whose other words the documents hold ("Tulsa County").
    2. A subject taken from elsewhere in the documents where the rest of the claim repeats one sentence ("Charles
       Babbage was born in London in 1815" against "Ada Lovelace was born in London in 1815"); not where that sentence
       names its subject by a pronoun ("She worked with Babbage" is about the claim's Lovelace).  Only then: a summary
       joins facts from several sentences, so a name from another sentence is too often right to be a substitution.
    3. A name of the evidence sentence moved into its subject's place (`_moved_into_subject`)."""
    claim_tokens = tokens(claim)
    candidates = names(claim) | _initial_capitalised(claim)
    claim_words = content_words(claim)
    claim_set = set(claim_words)
    sentences = STOP_BREAK.split(best.text)
    sentence = max(sentences, key=lambda t: len(set(content_words(t)) & claim_set))
    if _repeats_the_rest(claim, sentence, candidates) and not _PRONOUN.search(sentence):
        taken = sorted(n for n in _subjects(claim) & candidates if not name_or_short_form_in(n, tokens(sentence)))
        replaced = sorted(n for n in _subjects(sentence) & names(sentence) if n not in _WHEN and not name_or_short_form_in(n, claim_tokens))
        if taken and replaced:
            return [f"name: {taken[0]} vs {replaced[0]}"]
    window_words, window_names = set(content_words(best.text)), names(best.text)
    for one in sentences:
        moved = _moved_into_subject(claim, one, candidates, window_words, window_names)
        if moved:
            return [moved]
    evidence_names = [n for n in names(best.text)
                      if n not in _WHEN and not name_or_short_form_in(n, claim_tokens) and not _in_named_run(best.text, n, claim_tokens)]
    known = with_long_forms(claim, vocabulary.tokens)
    absent = [n for n in sorted(candidates)
              if n not in _WHEN and not name_or_short_form_in(n, known) and not _in_named_run(claim, n, known)]
    evidence_sentences = [content_words(s) for s in sentences]
    for name in absent:
        around = _neighbours(claim_words, stem(name))
        for other in sorted(evidence_names):
            # Neighbours within one sentence: the last words of one sentence do not stand next to the next one's first.
            if any(around & _neighbours(words, stem(other)) for words in evidence_sentences):
                return [f"name: {name} vs {other}"]
    return []


def _moved_into_subject(claim: str, sentence: str, candidates: frozenset[str] | set[str], window_words: set[str],
                        window_names: frozenset[str]) -> str | None:
    """3. A name of the sentence moved into its subject's place: "Bergwijn scored twice in the first half" where the
    sentence says "Kudus scored twice in the first half and Bergwijn added a third".  The claim's words after its
    subject that the sentence holds (two at least; the window holds them all) stand in it before that name
    does (so the name is not a second subject: "Kudus and Bergwijn scored")."""
    taken = _subjects(claim) & candidates
    # A capitalised first word names the subject when a verb follows it ("Kudus scored"), not a preposition ("Found in
    # 2014 by ...", "Founded in ...").
    follows = re.match(r"\s*[^\W\d_][\w\-]+\s+([a-z][\w\-]*)", sentence)
    opener = _initial_capitalised(sentence) if follows and follows.group(1) not in STOPWORDS else set()
    claim_words = set(content_words(claim))
    # Or the window writes it as a name inside a sentence ("... two moons, Phobos and Deimos. Phobos is the larger").
    known = names(sentence) | opener | (_initial_capitalised(sentence) & window_names)
    replaced = {n for n in _subjects(sentence) & known if n not in _WHEN and stem(n) not in claim_words}
    if not taken or not replaced or taken & replaced or _PRONOUN.match(sentence.lstrip()):
        return None
    if any(re.search(rf"\bby\s+(?:[A-Z][\w'’-]*\s+)*{re.escape(n)}\b", sentence, re.IGNORECASE) for n in taken):
        return None  # "a film directed by Christopher Nolan": the passive's agent is the subject the claim names
    taken_stems = {stem(n) for n in taken}
    words = content_words(sentence)
    # The claim's other words: all in the window, and those of this sentence before the moved name and before any
    # other name after the subject (they are the subject's, not those of another clause's subject: "Radja scored ...
    # and Desmarais made it 4-2 before Ling got one back" / "Ling scored to make it 4-3").  A paraphrase may take a
    # word from the sentence before ("Deimos orbits closer to Mars" / "Mars ... has two moons, Phobos and Deimos.
    # Phobos is the larger of the two and orbits closer to the planet, ..., while Deimos ...").
    rest = [w for w in content_words(claim) if w not in taken_stems]
    held = [w for w in rest if w in words]
    subject = {stem(n) for n in replaced}
    named = {stem(n) for n in names(sentence) if stem(n) not in _WHEN} | taken_stems  # "on Wednesdays" names no one
    others = [i for i, w in enumerate(words) if w in named and w not in subject]
    if len(held) < 2 or any(w not in window_words for w in rest) or not any(w in taken_stems for w in words) \
            or any(w in taken_stems for w in words[: len(replaced)]):
        return None
    if max(words.index(w) for w in held) < min(others):
        return f"name: {sorted(taken)[0]} vs {sorted(replaced)[0]}"
    return None


_NEAR = 2  # content words each side
# Days and months are dates, not the names of who or what did something.
_WHEN = frozenset((*WEEKDAYS, *MONTHS))


_REPEATS = 0.85  # share of the claim's other content words the evidence sentence must hold
_PRONOUN = re.compile(r"\b(?:he|she|they|his|her|hers|him|their|them)\b", re.IGNORECASE)


def _subjects(text: str) -> set[str]:
    """The capitalised words opening `text` (its subject, when a name): "Charles Babbage was born ...".  Not a name
    that only describes the subject, after an article and before a common noun ("A NASA astrophysicist has ...",
    "The Sydney native, who ...")."""
    match = re.match(r"\s*((?:[A-Z][\w'’-]*\s+){0,2}[A-Z][\w'’-]*)(\s+[a-z][\w-]*)?", undotted_titles(text))
    if match is None:
        return set()
    words = match.group(1).split()
    if words[0].lower() in ("a", "an", "the") and match.group(2) and match.group(2).strip() not in STOPWORDS:
        return set()
    return {_without_possessive(w.lower()) for w in words}


def _without_possessive(word: str) -> str:
    return word[:-2] if word.endswith(("'s", "’s")) else word.rstrip("'’")


def _repeats_the_rest(claim: str, evidence: str, claim_names: frozenset[str] | set[str]) -> bool:
    """The evidence sentence holds nearly all of the claim but for the claim's names it lacks."""
    held = set(content_words(evidence))
    lacking = {stem(n) for n in claim_names} - held
    rest = [w for w in content_words(claim) if w not in lacking]
    return len(lacking) > 0 and len(rest) >= 2 and sum(w in held for w in rest) >= _REPEATS * len(rest)


def _in_named_run(text: str, name: str, known: frozenset[str]) -> bool:
    """`name` is one capitalised word of a run in `text` whose other words are `known` ("Tulsa County", "Charles
    Babbage"): the same thing, named more or less fully."""
    for match in re.finditer(r"(?:[A-Z][\w'’-]*\s+){0,3}[A-Z][\w'’-]*", text):
        words = [_without_possessive(w.lower()) for w in match.group(0).split()]
        if name in words and len(words) > 1 and any(w != name and name_in(w, known) for w in words):
            return True
    return False


def _neighbours(words: list[str], name: str) -> set[str]:
    """The content words next to `name` (function words skipped: "founded [by the city of] Szentendre")."""
    out: set[str] = set()
    for i, word in enumerate(words):
        if word == name:
            out.update(words[max(0, i - _NEAR) : i] + words[i + 1 : i + 1 + _NEAR])
    return out - {name}


def _initial_capitalised(claim: str) -> set[str]:
    match = re.match(r"\s*([^\W\d_][\w\-]+)", claim)
    if match is None or not match.group(1)[0].isupper():
        return set()
    word = match.group(1).lower()
    return set() if word in _COMMON_OPENERS or stem(word) in _COMMON_OPENERS or not content_words(word) else {word}


# Capitalised first words that are not names even when the documents lack them (imperatives, discourse words).
_COMMON_OPENERS = frozenset(
    """based according overall additionally furthermore moreover however therefore thus hence meanwhile finally first
    second third next then lastly also instead otherwise regardless despite although though while whereas because since
    after before during once when where if unless until whether please note remember make ensure check use press turn
    return keep avoid remove install replace open close set select click tap go visit contact consult refer follow see
    read write try start stop wait let find put take give get add place hold pull push lift lower raise clean wash
    drive park allow today yesterday tomorrow currently recently previously initially eventually ultimately generally
    typically usually often sometimes always never many most some several few each every all both either neither
    another other such similarly likewise specifically notably importantly interestingly unfortunately fortunately
    sure yes okay thousands hundreds millions billions dozens tens several numerous tune stay watch anyone anybody
    everyone everybody someone somebody nobody people""".split()
)
