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
polarity checks see that they turn the same words.

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
    "deny denied denies denial fail failed fails failure refusal unwilling".split()
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
    ("vary", "same"), ("vary", "constant"), ("half", "full"), ("partial", "full"), ("partial", "complete"),
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
    text = _NAMED_NO.sub(" ", text)  # "the No Fly List": a name, not a negation
    joined = _PHRASE.sub(lambda m: _PHRASES[m.group(1).lower()], _NOT_A_NEGATION.sub(" ", text.lower()))
    joined = re.sub(r"(\w)n[’']t\b", r"\1 not", joined).replace("cannot", "can not")
    joined = re.sub(r"\b(?:have|has|had|is|are|was|were)\s+yet\s+to\b", "not", joined)  # "have yet to reach" = "haven't reached"
    joined = re.sub(r"\b(?:rather\s+than|instead\s+of)\b", "not", joined)  # "private individuals rather than public figures"
    return [t if t in STOPWORDS else _stem_term(t) for t in re.findall(r"[a-z]+_[a-z_]+|[^\W_]+", joined)]


_NAMED_NO = re.compile(r"(?<=\w[\s\"'“])No(?=\s+[A-Z])")


_NEGATING_PREFIXES = ("un", "non", "dis", "in", "im", "il", "ir")


def _prefixed_opposite(term: str, other: set[str]) -> str | None:
    """`term` is the negated form of a word of `other` ("unclear" / "clear", "nonviolent" / "violent"), or the
    other way round: an opposite found by its prefix, not from the table."""
    for prefix in _NEGATING_PREFIXES:
        if term.startswith(prefix) and len(term) - len(prefix) >= 4 and term[len(prefix) :] in other:
            return term[len(prefix) :]
        for word in other:
            if word.startswith(prefix) and word[len(prefix) :] == term and len(term) >= 4:
                return word
    return None


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
        conflicts = (*_number_conflicts(claim, window), *_name_conflicts(claim, window, vocabulary), *_polarity_conflicts(claim, window),
                     *_exclusive_conflicts(claim, window))
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


_ONLY = re.compile(r"\bonly\s+(?:the\s+|a\s+|an\s+)?([^\W\d_][\w-]*)", re.IGNORECASE)
_COORDINATION = re.compile(r"([^\W\d_][\w-]*)((?:\s*,\s*[^\W\d_][\w-]*)*\s*,?\s+(?:and|or)\s+(?:the\s+)?[^\W\d_][\w-]*)", re.IGNORECASE)


def _exclusive_conflicts(claim: str, window: Window) -> list[str]:
    """"Only X" where the evidence names X with others ("owners and admins"): the claim excludes what it keeps."""
    out = []
    claim_words = set(content_words(claim))
    for match in _ONLY.finditer(claim):
        kept = stem(match.group(1).lower())
        for group in _COORDINATION.finditer(window.text):
            members = [stem(w.lower()) for w in re.findall(r"[^\W\d_][\w-]*", group.group(0)) if w.lower() not in ("and", "or", "the")]
            others = [m for m in members if m != kept and m not in claim_words and m not in STOPWORDS]
            if kept in members and others:
                out.append(f"only: {kept} vs {kept} and {others[0]}")
                return out
    return out


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
    """A substituted name, in two forms.

    1. A name the documents lack, standing where the evidence names another ("Tesla designed the motor" where the
       sentence says Bláthy designed it).  "Where": a content word next to the claim's name (within `_NEAR` words)
       stands next to the evidence's name too.  The claim's first word counts here, since the evidence's own name is
       there to compare with.  Not a word of a longer name whose other words the documents hold ("Tulsa County").
    2. A subject taken from elsewhere in the documents where the rest of the claim repeats one sentence ("Charles
       Babbage was born in London in 1815" against "Ada Lovelace was born in London in 1815"); not where that sentence
       names its subject by a pronoun ("She worked with Babbage" is about the claim's Lovelace).  Only then: a summary
       joins facts from several sentences, so a name from another sentence is too often right to be a substitution."""
    claim_tokens = tokens(claim)
    candidates = names(claim) | _initial_capitalised(claim)
    sentence = max(_SENTENCES.split(best.text), key=lambda t: len(set(content_words(t)) & set(content_words(claim))))
    if _repeats_the_rest(claim, sentence, candidates) and not _PRONOUN.search(sentence):
        taken = sorted(n for n in _subjects(claim) & candidates if not name_or_short_form_in(n, tokens(sentence)))
        replaced = sorted(n for n in _subjects(sentence) & names(sentence) if n not in _WHEN and not name_or_short_form_in(n, claim_tokens))
        if taken and replaced:
            return [f"name: {taken[0]} vs {replaced[0]}"]
    evidence_names = [n for n in names(best.text)
                      if n not in _WHEN and not name_or_short_form_in(n, claim_tokens) and not _in_named_run(best.text, n, claim_tokens)]
    absent = [n for n in sorted(candidates)
              if n not in _WHEN and not name_or_short_form_in(n, vocabulary.tokens) and not _in_named_run(claim, n, vocabulary.tokens)]
    claim_words, evidence_words = content_words(claim), content_words(best.text)
    for name in absent:
        around = _neighbours(claim_words, stem(name))
        for other in sorted(evidence_names):
            if around & _neighbours(evidence_words, stem(other)):
                return [f"name: {name} vs {other}"]
    return []


_NEAR = 2  # content words each side
# Days and months are dates, not the names of who or what did something.
_WHEN = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july august september "
    "october november december".split()
)


_REPEATS = 0.85  # share of the claim's other content words the evidence sentence must hold
_PRONOUN = re.compile(r"\b(?:he|she|they|his|her|hers|him|their|them)\b", re.IGNORECASE)
_SENTENCES = re.compile(r"(?<=[.!?])\s+")


def _subjects(text: str) -> set[str]:
    """The capitalised words opening `text` (its subject, when a name): "Charles Babbage was born ..." ."""
    match = re.match(r"\s*((?:[A-Z][\w'’-]*\s+){0,2}[A-Z][\w'’-]*)", text)
    return {w.lower().rstrip("'’s") for w in match.group(1).split()} if match else set()


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
        words = [w.lower().rstrip("'’s") for w in match.group(0).split()]
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
    sure yes okay thousands hundreds millions billions dozens tens several numerous tune stay watch""".split()
)


def _polarity_conflicts(claim: str, best: Window) -> list[str]:
    evidence_clauses = [(c, set(content_words(c)), _terms(c)) for c in _clauses(best.text)]
    window_terms = [t for _, _, terms in evidence_clauses for t in terms]
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
            flips, why = _flips(clause, text, _terms(clause), terms, words & held, window_terms)
            if not flips:
                break
            reasons.append(why)
        else:
            out.append(reasons[0])
    return out


def _flips(claim: str, evidence: str, claim_terms: list[str], evidence_terms: list[str], shared: set[str],
           window_terms: Sequence[str] = ()) -> tuple[int, str]:
    """How the claim clause turns the evidence clause around: (1 when it does, else 0; the reasons).

    Opposites first ("decreased" / "increased", "unclear" / "clear").  A negation whose first word is one side of an
    opposite turns that opposite back ("will not change" = "will remain the same": agreement).  The other negations:
    a clause negating what both say, against one negating nothing, is a mismatch ("never mix this medicine with
    alcohol" / "you can take this medicine with alcohol"); both negating, however worded, agree; a negation the claim
    shares with another clause of the window is that clause's."""
    reasons: list[str] = []
    claim_set, evidence_set = set(claim_terms), set(evidence_terms)
    pairs: list[tuple[str, str]] = []
    for term in claim_terms:
        if term in evidence_set or any(term in p for p in pairs) or not _near_shared(claim_terms, term, shared):
            continue
        for opposite in (*_OPPOSITES.get(term, ()), _prefixed_opposite(term, evidence_set)):
            if opposite and opposite in evidence_set and opposite not in claim_set and not any(opposite in p for p in pairs) \
                    and _near_shared(evidence_terms, opposite, shared):
                pairs.append((term, opposite))
                break
    turned = {w for p in pairs for w in p}
    claim_heads, claim_turned = _negated(claim_terms, turned)
    evidence_heads, evidence_turned = _negated(evidence_terms, turned)
    for term, opposite in pairs:
        if not ((term in claim_turned) ^ (opposite in evidence_turned)):
            reasons.append(f"opposite: {term.replace('_', ' ')} vs {opposite.replace('_', ' ')}")
    claim_negates, evidence_negates = _governs(claim_heads, shared), _governs(evidence_heads, shared)
    if claim_negates != evidence_negates and not (claim_heads and evidence_heads):
        own = {scope[0] for scope in claim_heads} if claim_negates else set()
        if not own & {scope[0] for scope in _negated(list(window_terms), turned)[0]}:
            reasons.append("negation")
    order = _reversed_order(claim, evidence, shared)
    if order:
        reasons.append(order)
    return (1 if reasons else 0), " + ".join(reasons)


def _negated(terms: Sequence[str], turned: set[str]) -> tuple[list[list[str]], set[str]]:
    """(the scope of each negation: its next content words, in order; the opposites' words negations govern, whose
    negations are spent on turning them)."""
    scopes: list[list[str]] = []
    opposites: set[str] = set()
    for i, term in enumerate(terms):
        if term not in _NEGATION_WORDS:
            continue
        scope = [t for t in terms[i + 1 : i + 1 + _SCOPE] if t not in STOPWORDS and t not in _NEGATION_WORDS and len(t) > 1]
        if scope and scope[0] in turned:
            opposites.add(scope[0])
        elif scope:
            scopes.append(scope)
    return scopes, opposites


def _governs(scopes: list[list[str]], shared: set[str]) -> bool:
    """A negation governs what the two clauses share: its first content word is shared ("does not [cover] water
    damage"), or two shared words and half of them stand in its scope ("never mix [this medicine] with [alcohol]");
    not "won't talk about the deployment" against "the deployment supports deterrence"."""
    for scope in scopes:
        held = len(set(scope) & shared)
        if scope[0] in shared or (held >= 2 and held * 2 >= len(shared)):
            return True
    return False


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
