"""Contradictions: a claim whose aligned evidence (alignment.py) says otherwise.

Word overlap sees content a claim *adds*, never content it *contradicts*: "You can mix this cleaner with bleach"
shares every content word with "Never mix this cleaner with bleach".  So the claim is compared with the evidence it
rests on, mismatch by mismatch:

- **numbers** (quantities.py): a quantity of the claim that the evidence states otherwise, counting the same thing
  ("3 years" where the aligned sentence says "2 years"; "10 miles" for "10 km"; a year moved to another event).
  Rounding, hedges ("about") and unit conversions agree;
- **names**: a name the documents lack, where the aligned evidence names someone or something the claim does not
  ("Tesla designed the motor" where the sentence says Bláthy did);
- **polarity**: a negation (not, never, no, without, cannot...) on one side only, within the clause that holds the
  claim's words;
- **opposites**: a word on one side whose opposite is on the other (before/after, at least/at most, more/less,
  first/second, always/never, read-only/write-only, allowed/prohibited...);
- **order**: the same order word with its two sides swapped ("update the firmware before backing up" where the
  manual says to back up before updating).
A negation and an opposite together cancel out ("not available after 14 days" = "available within 14 days"): the
polarity checks count flips, and an even number of flips is agreement.

Every check needs a confident alignment (most of the claim's weighted content in the window), so that a claim that
merely touches a sentence is never said to contradict it; a claim the evidence does not state at all is left to the
"not found" rules (claims.py).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragtap.scoring.alignment import Window
from ragtap.scoring.lexical import STOPWORDS, DocumentVocabulary, content_words, name_in, name_or_short_form_in, names, tokens
from ragtap.scoring.quantities import contradicting, converted_within, quantities, stated_in
from ragtap.scoring.words import stem

MIN_COVERAGE = 0.5  # share of the claim's weighted content words the window must hold for any comparison
MIN_CLAUSE_OVERLAP = 2  # content words a claim clause and an evidence clause must share to compare their polarity

_NEGATION_WORDS = frozenset(
    stem(w) for w in "not never no none nothing nobody nowhere neither nor without unable refuse refused refuses declined declines "
    "deny denied denies fail failed fails unwilling".split()
)  # as stems (terms are stemmed): "refused to bargain" = "wouldn't bargain"
# Negation words that negate nothing here: "not only ... but", "no matter", "No," answering a yes/no question, "No. 1",
# "no later than" / "no more than" (quantifiers: compared as opposites below).
_NOT_A_NEGATION = re.compile(
    r"\bnot\s+only\b|\bno\s+matter\b|\bno\s*,|^\s*no\b\s*[.!]|\bno\.\s*\d|\bno\s+(?:later|earlier|more|less|fewer|sooner|longer)\s+than\b"
    r"|\bnothing\s+but\b|\bno-|\bnot\s+just\b|\bno\s+doubt\b|\bno\b[^.;]{0,40}\b(?:more|better|greater|bigger|larger)\b[^.;]{0,30}\bthan\b",
    re.IGNORECASE,
)
_SCOPE = 5  # a negation governs the words up to this many tokens after it ("does not [cover water damage]")
_CLAUSE = re.compile(r"[;:]\s+|(?<=[.!?])\s+|\s+(?:but|while|whereas|although|though|however|except|unless)\s+|\s+-{1,2}\s+", re.IGNORECASE)

# Opposites, by stem.  Multi-word ones are joined with "_" before matching ("at least" -> "at_least").
_PHRASES = {
    "at least": "at_least", "at most": "at_most", "no more than": "at_most", "no less than": "at_least", "no later than": "at_latest",
    "no earlier than": "at_earliest", "more than": "more_than", "less than": "less_than", "fewer than": "less_than",
    "greater than": "more_than", "read-only": "read_only", "write-only": "write_only", "read only": "read_only",
    "write only": "write_only", "turn on": "turn_on", "turn off": "turn_off", "switch on": "turn_on", "switch off": "turn_off",
    "up to": "at_most",
}
_OPPOSITES_LIST = (
    ("earliest", "latest"), ("at_earliest", "at_latest"), ("first", "second"), ("at_least", "at_most"), ("more_than", "less_than"), ("minimum", "maximum"), ("min", "max"),
    ("more", "less"), ("more", "fewer"), ("higher", "lower"), ("highest", "lowest"), ("larger", "smaller"),
    ("largest", "smallest"), ("bigger", "smaller"), ("longer", "shorter"), ("older", "younger"), ("oldest", "youngest"),
    ("above", "below"), ("increase", "decrease"), ("increase", "reduce"), ("rise", "fall"), ("raise", "lower"),
    ("gain", "loss"), ("always", "never"), ("always", "sometimes"), ("all", "none"), ("every", "no"),
    ("allow", "prohibit"), ("allow", "forbid"), ("allow", "ban"), ("permit", "prohibit"), ("enable", "disable"),
    ("open", "close"), ("open", "shut"), ("available", "unavailable"), ("possible", "impossible"), ("safe", "unsafe"),
    ("safe", "dangerous"), ("legal", "illegal"), ("include", "exclude"), ("inside", "outside"), ("internal", "external"),
    ("upper", "lower"), ("left", "right"), ("north", "south"), ("east", "west"), ("win", "lose"), ("won", "lost"),
    ("accept", "reject"), ("approve", "reject"), ("approve", "deny"), ("grant", "deny"), ("positive", "negative"),
    ("true", "false"), ("correct", "incorrect"), ("success", "failure"), ("succeed", "fail"), ("read_only", "write_only"),
    ("hot", "cold"), ("warm", "cool"), ("heavy", "light"), ("fast", "slow"), ("early", "late"), ("same", "different"),
    ("full", "empty"), ("wet", "dry"), ("import", "export"), ("buy", "sell"), ("bought", "sold"), ("male", "female"),
    ("guilty", "innocent"), ("convict", "acquit"), ("alive", "dead"), ("increase", "cut"), ("add", "remove"),
    ("connect", "disconnect"), ("lock", "unlock"), ("tighten", "loosen"), ("install", "uninstall"), ("mandatory", "optional"),
    ("required", "optional"), ("must", "optional"), ("public", "private"), ("turn_on", "turn_off"),
    ("within", "after"), ("start", "stop"), ("start", "end"), ("begin", "end"), ("entry", "exit"), ("enter", "exit"),
    ("maximum", "minimum"), ("majority", "minority"), ("most", "least"), ("most", "few"), ("many", "few"),
    ("expensive", "cheap"), ("cheaper", "more_expensive"), ("strong", "weak"), ("strengthen", "weaken"),
    ("support", "oppose"), ("agree", "disagree"), ("like", "dislike"), ("love", "hate"), ("friend", "enemy"),
    ("ally", "enemy"), ("victory", "defeat"), ("rich", "poor"), ("high", "low"), ("wide", "narrow"), ("thick", "thin"),
    ("deep", "shallow"), ("near", "far"), ("inbound", "outbound"), ("upload", "download"), ("input", "output"),
    ("increase", "drop"), ("change", "remain"), ("change", "same"), ("change", "stay"), ("differ", "same"),
    ("vary", "same"), ("vary", "constant"),
)


def _stem_term(term: str) -> str:
    return term if "_" in term else stem(term)  # joined phrases ("read_only") are compared as written


def _opposites() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for a, b in _OPPOSITES_LIST:
        for x, y in ((a, b), (b, a)):
            table.setdefault(_stem_term(x), set()).add(_stem_term(y))
    return {k: frozenset(v) for k, v in table.items()}


_OPPOSITES = _opposites()
_PHRASE = re.compile(r"\b(" + "|".join(re.escape(p) for p in sorted(_PHRASES, key=len, reverse=True)) + r")\b", re.IGNORECASE)
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)?|[^\W\d_]+_[^\W\d_]+", re.UNICODE)


def _terms(text: str) -> list[str]:
    """Stemmed words with the opposite-bearing phrases joined ("at least" -> "at_least"), in order; "n't" is its
    own term ("doesn't" -> "doe", "not")."""
    joined = _PHRASE.sub(lambda m: _PHRASES[m.group(1).lower()], _NOT_A_NEGATION.sub(" ", text.lower()))
    joined = re.sub(r"(\w)n[’']t\b", r"\1 not", joined).replace("cannot", "can not")
    joined = re.sub(r"\b(?:have|has|had|is|are|was|were)\s+yet\s+to\b", "not", joined)  # "have yet to reach" = "haven't reached"
    joined = re.sub(r"\b(?:rather\s+than|instead\s+of)\b", "not", joined)  # "private individuals rather than public figures"
    return [_stem_term(t) for t in re.findall(r"[a-z]+_[a-z_]+|[^\W_]+", joined)]


def _has_negation(terms: list[str]) -> bool:
    return any(term in _NEGATION_WORDS for term in terms)


def _governs_shared(terms: list[str], shared: set[str]) -> bool:
    """True when a negation governs what the two clauses share: the first content word after it (within `_SCOPE`
    terms) is shared ("does not [cover] water damage"), or half the shared words stand in its scope ("never mix [this
    medicine] with [alcohol]"); not "won't talk about the deployment" against "the deployment supports deterrence"."""
    for i, term in enumerate(terms):
        if term not in _NEGATION_WORDS:
            continue
        scope = [t for t in terms[i + 1 : i + 1 + _SCOPE] if t not in STOPWORDS and t not in _NEGATION_WORDS and len(t) > 1]
        if scope and (scope[0] in shared or len(set(scope) & shared) * 2 >= len(shared)):
            return True
    return False


def _clauses(text: str) -> list[str]:
    return [c for c in _CLAUSE.split(text) if c and c.strip()]


TIE = 0.1  # windows this close to the best one are as likely the claim's evidence: any of them may agree


def find_conflicts(claim: str, windows: Sequence[Window], vocabulary: DocumentVocabulary) -> tuple[str, ...]:
    """What the claim's aligned evidence says otherwise; empty when it says nothing against the claim.  When several
    windows align about equally well (a manual states both cases: "ready, proceed" and "not ready, do not
    proceed"), the claim gets the benefit of the doubt: it is contradicted only if every one of them disagrees."""
    if not windows or windows[0].coverage < MIN_COVERAGE or windows[0].covered < 2:
        return ()
    candidates = [w for w in windows if w.coverage >= max(MIN_COVERAGE, windows[0].coverage - TIE)]
    found: tuple[str, ...] = ()
    for rank, window in enumerate(candidates):
        conflicts = (*_number_conflicts(claim, window), *_name_conflicts(claim, window, vocabulary), *_polarity_conflicts(claim, window))
        if not conflicts:
            return ()
        if rank == 0:
            found = conflicts
    return found


_SEGMENT = re.compile(r"[;,:]\s+|(?<=[.!?])\s+|\s+(?:and|or|but|while|whereas|whichever)\s+", re.IGNORECASE)
_LOCAL = 40  # characters each side of a number that say what it is about ("the pension plan after [12 months]")


def _around(text: str, start: int, end: int) -> str:
    """`_LOCAL` characters each side of text[start:end], widened to whole words."""
    left, right = max(0, start - _LOCAL), min(len(text), end + _LOCAL)
    while left > 0 and text[left - 1].isalnum():
        left -= 1
    while right < len(text) and text[right].isalnum():
        right += 1
    return text[left:right]


def _number_conflicts(claim: str, window: Window) -> list[str]:
    """A quantity of the claim that the evidence states otherwise.  Compared within the part of the sentence about
    the same thing: "pension after 3 months, bonus after 12 months" does not state "pension after 12 months"."""
    own = quantities(claim)
    evidence = quantities(window.text)
    if not own or not evidence:
        return []
    segments = [(set(content_words(part)), quantities(part)) for part in _SEGMENT.split(window.text) if part.strip()]
    out = []
    for q in own:
        if converted_within(q, own):
            continue
        local = set(content_words(_around(claim, q.start, q.end)))
        overlap = [len(local & words) for words, _ in segments]
        best = max(overlap, default=0)
        about = [found for (_, found), n in zip(segments, overlap) if n == best and n > 0]
        if any(stated_in(q, found) for found in about):
            continue
        other = next((o for found in about if (o := contradicting(q, found)) is not None), None)
        if other is None and not stated_in(q, evidence):
            other = contradicting(q, evidence)  # "60,000 miles" where the sentence says "60,000 km", in another part
        if other is not None and not stated_in(other, own):
            out.append(f"number: {q.describe()} vs {other.describe()}")
    return out


def _name_conflicts(claim: str, best: Window, vocabulary: DocumentVocabulary) -> list[str]:
    """A name the documents lack, standing where the evidence names another: a substituted name ("Tesla designed
    the motor" where the sentence says Bláthy designed it).  "Where": a content word next to the claim's name
    (within `_NEAR` words) stands next to the evidence's name too.  The claim's first word counts here, since the
    evidence's own name is there to compare with."""
    claim_tokens = tokens(claim)
    evidence_names = [n for n in names(best.text) if not name_or_short_form_in(n, claim_tokens)]
    if not evidence_names:
        return []
    # Only names absent from all the documents: a summary joins facts from several sentences, so a name taken from
    # another sentence is too often right to be called a substitution.
    absent = sorted(n for n in names(claim) | _initial_capitalised(claim) if not name_or_short_form_in(n, vocabulary.tokens))
    claim_words, evidence_words = content_words(claim), content_words(best.text)
    for name in absent:
        around = _neighbours(claim_words, stem(name))
        for other in sorted(evidence_names):
            if around & _neighbours(evidence_words, stem(other)):
                return [f"name: {name} vs {other}"]
    return []


_NEAR = 2  # content words each side


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
    sure yes okay""".split()
)


def _polarity_conflicts(claim: str, best: Window) -> list[str]:
    evidence_clauses = [(c, set(content_words(c)), _terms(c)) for c in _clauses(best.text)]
    evidence_clauses = [e for e in evidence_clauses if e[1]]
    out: list[str] = []
    for clause in _clauses(claim):
        words = set(content_words(clause))
        if len(words) < MIN_CLAUSE_OVERLAP:
            continue
        overlap = {i: len(words & e[1]) for i, e in enumerate(evidence_clauses)}
        best = max(overlap.values(), default=0)
        if best < MIN_CLAUSE_OVERLAP or best < 0.5 * len(words):
            continue
        # Every evidence clause that holds the claim clause as well as the best one must turn it around.
        reasons = []
        for i in (i for i, n in overlap.items() if n == best):
            text, held, terms = evidence_clauses[i]
            flips, why = _flips(clause, text, _terms(clause), terms, words & held)
            if flips % 2 == 0:
                break
            reasons.append(why)
        else:
            out.append(reasons[0])
    return out


def _flips(claim: str, evidence: str, claim_terms: list[str], evidence_terms: list[str], shared: set[str]) -> tuple[int, str]:
    """How many times the claim clause turns the evidence clause around, and the reasons."""
    reasons: list[str] = []
    claim_set, evidence_set = set(claim_terms), set(evidence_terms)
    turned: set[str] = set()  # the two sides of each opposite found
    for term in claim_terms:
        if term in evidence_set or term in turned or not _near_shared(claim_terms, term, shared):
            continue
        for opposite in _OPPOSITES.get(term, ()):
            if opposite in evidence_set and opposite not in claim_set and opposite not in turned and _near_shared(evidence_terms, opposite, shared):
                reasons.append(f"opposite: {term.replace('_', ' ')} vs {opposite.replace('_', ' ')}")
                turned.update((term, opposite))
                break
    # A negation on one side only, governing what both sides say or one side of an opposite ("will not change" /
    # "will remain the same": two flips, agreement).  Both sides negated, however worded, agree ("unable, due to her
    # condition, to attend" = "may be unable to attend").
    claim_negative, evidence_negative = _has_negation(claim_terms), _has_negation(evidence_terms)
    if claim_negative != evidence_negative and _governs_shared(claim_terms if claim_negative else evidence_terms, shared | turned):
        reasons.append("negation")
    order = _reversed_order(claim, evidence, shared)
    if order:
        reasons.append(order)
    return len(reasons), " + ".join(reasons)


def _near_shared(terms: list[str], term: str, shared: set[str]) -> bool:
    """An opposite counts only where it qualifies what both sides say ("[older] brother" / "[younger] brother"),
    not as a stray adverb ("never been done before" / "After the launch")."""
    return any(t in shared for i, t0 in enumerate(terms) if t0 == term for t in terms[max(0, i - 3) : i] + terms[i + 1 : i + 4])


_ORDER_CUE = re.compile(r"\b(before|after|prior\s+to|followed\s+by|until)\b", re.IGNORECASE)


def _event_order(clause: str, shared: set[str]) -> tuple[set[str], set[str]] | None:
    """(what happens first, what happens later), as the clause's shared words, from its first order word:
    "A before B" and "Before B, A" -> (A, B); "A after B" and "After B, A" -> (B, A)."""
    cue = _ORDER_CUE.search(clause)
    if cue is None:
        return None
    word = cue.group(1).lower().split()[0]
    head, tail = clause[: cue.start()], clause[cue.end() :]
    if not set(content_words(head)) & shared and "," in tail:  # fronted: "Before updating the software, back up"
        inner, _, outer = tail.partition(",")
        left, right = outer, inner  # "Before B, A" reads "A before B"
    else:
        left, right = head, tail
    a, b = set(content_words(left)) & shared, set(content_words(right)) & shared
    if not a or not b:
        return None
    return (a, b) if word in ("before", "prior", "followed", "until") else (b, a)


def _reversed_order(claim: str, evidence: str, shared: set[str]) -> str | None:
    """The two events of an order relation swapped: "update, then back up" against "back up before updating"
    (however each side words it: before, after, prior to, a fronted "Before ..., ...")."""
    claim_order, evidence_order = _event_order(claim, shared), _event_order(evidence, shared)
    if claim_order is None or evidence_order is None:
        return None
    (c_first, c_later), (e_first, e_later) = claim_order, evidence_order
    if c_first & e_later and c_later & e_first and not c_first & e_first and not c_later & e_later:
        return "order: the events are reversed"
    return None
