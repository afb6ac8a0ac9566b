"""Polarity: a claim clause that turns its evidence clause around (conflicts.py's negation, opposite and order checks).

- **negation**: a negation (not, never, no, without, cannot, refused...) on one side only, governing what both
  clauses say ("never mix this medicine with alcohol" / "you can take this medicine with alcohol");
- **opposites**: a word on one side whose opposite is on the other, from a table (at least/at most, more/less,
  first/second, always/never, read-only/write-only, allowed/prohibited, within/after, "except for"/"only for"...),
  two members of a closed class (months, weekdays, colours, how often: "monthly"/"daily") or by a negating prefix
  ("unclear" / "clear").  The pair must qualify the same thing: a shared word or number a few terms from each
  ("a [minimum] of 25%" / "a [maximum] of 25%"), in one clause or, where the claim joins two, in the sentence;
- **order** (order.py): the same order relation with its two events swapped ("update the firmware before backing up" where
  the manual says to back up before updating), however each side words it (before, after, prior to, until, a
  fronted "Before ..., ...", "A, then B").
- **a denied permission**: what one clause says is not possible ("cancellations by phone are not accepted") or
  forbids ("Glass must not go in the blue bin", "Never use vinegar"), said to be possible by a claim that says "can"
  or answers "Yes" ("Yes, you can cancel by phone"); a claim that warns against what is forbidden ("it is dangerous
  to ...") agrees with it.
A negation and an opposite together cancel out ("not available after 14 days" = "available within 14 days"); "unless"
reads "if not".
Clauses are compared only where they share content words (MIN_CLAUSE_OVERLAP), and every evidence clause that
holds the claim clause as well as the best one must disagree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ragtap.scoring.alignment import Window
from ragtap.scoring.lexical import STOPWORDS, content_words
from ragtap.scoring.order import reversed_order
from ragtap.scoring.sentences import STOP_BREAK
from ragtap.scoring.words import MONTHS, WEEKDAYS, stem

MIN_CLAUSE_OVERLAP = 2  # content words a claim clause and an evidence clause must share to compare their polarity

_NEGATION_WORDS = frozenset(
    stem(w) for w in "not never no none nothing nobody nowhere neither nor without unable refuse refused refuses declined declines "
    "deny denied denies denial fail failed fails failure refusal unwilling reluctant refrain".split()
)  # as stems (terms are stemmed): "refused to bargain" = "wouldn't bargain"
# Negation words that negate nothing here: "not only ... but", "no matter", "No," answering a yes/no question, "No. 1",
# "no sooner than".  ("no later than", "no more than", "no fewer than" are quantifiers: _PHRASES joins them, and they
# are compared as opposites.)
_NOT_A_NEGATION = re.compile(
    r"\bnot\s+only\b|\bno\s+matter\b|\bno\s*,|^\s*no\b\s*(?:[.!—–]|-\s)|\bno\.\s*\d|\bno\s+(?:sooner|longer)\s+than\b"
    r"|\bnothing\s+but\b|\bno-|\bnot\s+just\b|\bno\s+doubt\b|\bno\b(?!\s+more\s+than)[^.;]{0,40}\b(?:more|better|greater|bigger|larger)\b[^.;]{0,30}\bthan\b"
    r"|^\s*not\s+(?:much|really|quite|exactly|necessarily|always|at\s+all)\b\s*(?:[—–,.!:;]|-\s)",  # a reply: "Not much — ..."
    re.IGNORECASE,
)
# Verbs that say something stopped or is absent: the side that has one (and not the other side) says with it what a
# negation says ("Version 4.2 removed support for Python 3.7" / "Python 3.7 is no longer supported").  Not negation
# words themselves: "Do not remove the cover" against "Remove the cover" must still disagree.
_CESSATION = frozenset(
    stem(w) for w in "remove removed removes drop dropped drops discontinue discontinued discontinues deprecate deprecated "
    "cease ceased ceases withdraw withdrew withdrawn abolish abolished eliminate eliminated retire retired lack lacks lacked "
    "exclude excluded excludes".split()
)
# ... and said as a fact of what the evidence is about, not an instruction ("Remove the cover"): "were removed".
_REMOVED = re.compile(r"\b(?:was|were|has\s+been|have\s+been|had\s+been)\s+(removed|dropped|discontinued|withdrawn|abolished|eliminated|retired|deprecated)\b",
                      re.IGNORECASE)
# Words that say "hardly any" ("made little headway", "few survived", "barely moved"): a side with one of them is no
# plain assertion for a negation on the other side to contradict; the two may say the same thing.
_SCANT = frozenset(stem(w) for w in "little few hardly barely scarcely seldom rarely".split())
# Words that warn against something ("cruise control can be dangerous in heavy traffic"): a side with one of them says
# in its way what a prohibition on the other side says ("do not use cruise control in heavy traffic").
_WARNING = frozenset(stem(w) for w in "dangerous danger unsafe hazardous hazard risky harmful avoid caution careful "
                     "warning warn".split())
# A failure and what it leads to: a warning to do the thing failed ("Failure to follow these instructions may result
# in injury" = "follow these instructions to avoid injury").
_FAILURE = frozenset(stem(w) for w in "fail failure failing".split())
_CONSEQUENCE = frozenset(stem(w) for w in "result results cause causes lead leads damage injury injuries harm".split())
# Negated auxiliaries whose stem is not the word before "n't".
_IRREGULAR = {"ca": "can", "wo": "will", "sha": "shall"}
_IRREGULAR_NOT = re.compile(r"\b(ca|wo|sha)n[’']t\b")
# A prohibition said with a word, not a negation ("Smoking is forbidden"): what "you cannot smoke" says.
_PROHIBITION = frozenset(stem(w) for w in "forbid forbids forbidden prohibit prohibits prohibited ban bans banned".split())
_NEAR_POSSIBLE = 4  # terms between "can" and what it says is possible ("[glass] jars [can] go", "[can] cancel by [phone]")
_MODALS = frozenset({"must", "should", "may", "can", "shall"})
_EXCLUDING = frozenset({"except", stem("excluding"), stem("besides")})
# A denial of one of these says something is not possible ("debit cards are not accepted", "students of medicine are not
# eligible"); a claim that says it is possible (_POSSIBLE, or an answer opening with "Yes") asserts what it denies.
_PERMISSION = frozenset(stem(w) for w in "accepted allowed permitted available eligible possible supported covered refundable "
                        "refunded valid offered provided compatible recommended suitable".split())
_POSSIBLE = frozenset(stem(w) for w in "can able allowed permitted possible available eligible accepted welcome".split())
_SCOPE = 5  # a negation governs the words up to this many tokens after it ("does not [cover water damage]")
# "may not sublet the property or keep pets without the landlord's consent": a "without" this many terms after a
# negation turns it into a condition (both are needed, one assertion: allowed with consent).
_DOUBLE_NEGATION_REACH = 10
# Clauses.  "except" opens its clause and stays in it ("except for" / "only for" are compared); "unless" is "if not"
# inside its sentence's clause (`_terms`), so both sides' conditions are compared with what they govern.
_CLAUSE = re.compile(r"[;:]\s+|(?<=[.!?])\s+|\s+(?:but|while|whereas|although|though|however)\s+|,\s+so\s+(?!that\b)|\s+(?=except\s)|\s+-{1,2}\s+"
                     # "plastic bottles are allowed, glass isn't": a short elliptical negation after a comma is a clause
                     r"|,\s+(?!(?:but|and|or|while|whereas|so)\b)(?=(?:[^\W\d_][\w-]*\s+){1,3}(?:is|are|was|were|do|does|did|can|will)(?:n[’']t|\s+not)\s*[.!]?\s*$)"
                     # "allowed in the rooms, just not in the kitchen": a place or a time denied after a comma
                     r"|,\s+just\s+(?=not\s+(?:in|on|at|inside|outside|during|after|before)\b)",
                     re.IGNORECASE)

# Opposites, by stem.  Multi-word ones are joined with "_" before matching ("at least" -> "at_least").
_PHRASES = {
    "at least": "at_least", "at most": "at_most", "no more than": "at_most", "no less than": "at_least", "no fewer than": "at_least", "no later than": "at_latest",
    "no earlier than": "at_earliest", "more than": "more_than", "less than": "less_than", "fewer than": "less_than",
    "greater than": "more_than", "read-only": "read_only", "write-only": "write_only", "read only": "read_only",
    "write only": "write_only", "turn on": "turn_on", "turn off": "turn_off", "switch on": "turn_on", "switch off": "turn_off",
    "except for": "except", "apart from": "except",
    **{f"only {to}": "only_to" for to in ("for", "to", "on", "in", "at")},  # "only for households on pension credit"
    "up to": "at_most", "never more than": "at_most", "not more than": "at_most", "never less than": "at_least",
    "not less than": "at_least",
    # How often: the adverb and "per/every/each ..." are one term, so "charged monthly" meets "accrues daily" but a
    # "12-month contract" never meets a "one-year contract" (a duration: quantities.py compares those).
    "hourly": "freq_hour", "daily": "freq_day", "weekly": "freq_week", "monthly": "freq_month", "yearly": "freq_year",
    "annually": "freq_year", "quarterly": "freq_quarter", "nightly": "freq_day",
    **{f"{each} {unit}": f"freq_{unit}" for each in ("per", "every", "each") for unit in ("hour", "day", "week", "month", "quarter", "year")},
}
_OPPOSITES_LIST = (
    ("earliest", "latest"), ("at_earliest", "at_latest"), ("first", "second"), ("first", "last"), ("at_least", "at_most"), ("more_than", "less_than"), ("minimum", "maximum"), ("min", "max"),
    ("more", "less"), ("more", "fewer"), ("higher", "lower"), ("highest", "lowest"), ("larger", "smaller"),
    ("largest", "smallest"), ("bigger", "smaller"), ("longer", "shorter"), ("taller", "shorter"), ("older", "younger"), ("oldest", "youngest"),
    ("above", "below"), ("increase", "decrease"), ("increase", "reduce"), ("rise", "fall"), ("raise", "lower"),
    ("gain", "loss"), ("always", "never"), ("always", "sometimes"), ("all", "none"), ("every", "no"),
    ("allow", "prohibit"), ("allow", "forbid"), ("allow", "forbidden"), ("permit", "forbidden"), ("allow", "ban"), ("permit", "prohibit"), ("enable", "disable"),
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
    # an exception turned around: "the tax rises except for households on pension credit" / "rises only for them"
    ("except", "only_to"),
    ("remove", "keep"), ("remove", "stay"), ("optional", "include"),
    ("fixed", "variable"), ("working", "calendar"), ("business", "calendar"),
    ("erase", "keep"), ("erase", "retain"), ("erase", "preserve"), ("delete", "keep"), ("delete", "retain"), ("wipe", "keep"),
    ("lose", "keep"), ("reset", "keep"),
)


# Closed classes: any two members are opposites where one stands in the claim and the other in its evidence ("reopened
# in December 2023" / "reopened in March 2023"; "the light turns red" / "turns green").  Not "May" (a modal verb too).
_EXCLUSIVE_CLASSES = (
    [month for month in MONTHS if month != "may"],
    list(WEEKDAYS),
    "freq_hour freq_day freq_week freq_month freq_quarter freq_year".split(),
    "red green blue yellow orange white black amber purple grey gray pink brown".split(),
)


def _stem_term(term: str) -> str:
    return term if "_" in term else stem(term)  # joined phrases ("read_only") are compared as written


def _opposites() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    members = [(a, b) for group in _EXCLUSIVE_CLASSES for a in group for b in group if a < b and {a, b} != {"grey", "gray"}]
    for a, b in (*_OPPOSITES_LIST, *members):
        for x, y in ((a, b), (b, a)):
            table.setdefault(_stem_term(x), set()).add(_stem_term(y))
    return {k: frozenset(v) for k, v in table.items()}


_OPPOSITES = _opposites()
_HOW_OFTEN = re.compile(r"\b(?:" + "|".join(p for p, term in _PHRASES.items() if term.startswith("freq_")) + r")\b", re.IGNORECASE)
# A thing said to be on or off (a light, a switch, a mode): the state "turn on" / "turn off" lead to.  Only where nothing
# follows that "on" could govern ("are on the dashboard" is a place).
_STATE_ON_OFF = re.compile(r"\b(?:is|are|was|were|be|stays?|remains?|comes?|came)\s+(on|off)\b"
                           r"(?=\s*(?:[,.;:!?)]|$|(?:and|or|but|when|while|if|until|unless|during|again)\b))")
_PHRASE = re.compile(r"\b(" + "|".join(re.escape(p) for p in sorted(_PHRASES, key=len, reverse=True)) + r")\b", re.IGNORECASE)


def _terms(text: str) -> list[str]:
    """Stemmed words with the opposite-bearing phrases joined ("at least" -> "at_least"), in order; "n't" is its
    own term ("doesn't" -> "doe", "not")."""
    text = _IN_A_NAME.sub(" ", text)  # "the No Fly List", "North Dakota", "Northern Lights": names, not polarity
    text = _NON_NAME.sub(r"\1 ", text)  # "non-Northgate machines" are other machines, not the opposite of Northgate's
    joined = _PHRASE.sub(lambda m: _PHRASES[m.group(1).lower()], _RATE.sub(r"\1per ", _NOT_A_NEGATION.sub(" ", text.lower())))
    joined = _STATE_ON_OFF.sub(r"turn_\1", joined)  # "the lights are on" says what "the lights turn on" says
    joined = _IRREGULAR_NOT.sub(lambda m: f"{_IRREGULAR[m.group(1)]} not", joined)  # "can't" is "can not", not "ca not"
    joined = re.sub(r"(\w)n[’']t\b", r"\1 not", joined).replace("cannot", "can not")
    joined = re.sub(r"\b(?:have|has|had|is|are|was|were)\s+yet\s+to\b", "not", joined)  # "have yet to reach" = "haven't reached"
    joined = re.sub(r"\b(?:rather\s+than|instead\s+of)\b", "not", joined)  # "private individuals rather than public figures"
    joined = re.sub(r"\bunless\b", "if not", joined)  # "charged unless you join in an open week" / "charged if you join ..."
    joined = re.sub(r"\bpast(?=\s+(?:the|its|their|this|that|a|an|\d))", "after", joined)  # "three days past the deadline"
    joined = _LAST_AS_PREVIOUS.sub(lambda m: f"{m.group('verb') or ''}previous", joined)  # "last month", "lasts 3 years": not the opposite of "first"
    joined = _HYPHENATED_PREFIX.sub(r"\1", joined)  # "non-profit" is "nonprofit"
    return [_term(t) for t in re.findall(r"[a-z]+_[a-z_]+|[^\W_]+", joined)]


def _term(word: str) -> str:
    if word in STOPWORDS:
        return word
    term = _stem_term(word)
    # The stemmer makes "noted" and "noting" into "not": only "not" itself is that negation.
    return word if term in _SHORT_NEGATIONS else _ONE_PERMISSION.get(term, term)


# Words of one permission, compared as one ("Dogs are welcome" / "dogs aren't allowed").
_ONE_PERMISSION = {stem(w): stem("allowed") for w in ("welcome", "welcomed", "permitted", "permit")}


_SHORT_NEGATIONS = frozenset({"not", "no", "nor"})
# A capitalised word inside a sentence followed by another: one word of a name ("the No Fly List", "North Dakota",
# "Northern Lights", "Upper East Side"), whose "no", "north" or "upper" opposes nothing the other side says.
_IN_A_NAME = re.compile(r"(?<=\w[\s\"'“])[A-Z][a-z]*(?=\s+[A-Z][a-z])")
_NON_NAME = re.compile(r"\b(non|un|anti)-(?=[A-Z])")  # lower-case prefix: "Non-Locking Storage Wall" is a title
_HYPHENATED_PREFIX = re.compile(r"\b(non|un|dis|in|im|il|ir)-(?=[a-z])")


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


def _words(text: str, terms: list[str] | None = None) -> set[str]:
    """The content words, as the terms write them: "landlord's" is "landlord" here (its terms are "landlord", "s");
    and how often, as one term ("the monthly fee" holds "freq_month", which a negation's scope shows).  `terms`: the
    text's, when they were read already."""
    if terms is None:
        terms = _terms(text) if _HOW_OFTEN.search(text) else []
    return {_ONE_PERMISSION.get(w.rstrip("'"), w.rstrip("'")) for w in content_words(text)} | {t for t in terms if t.startswith("freq_")}


def clauses(text: str) -> list[str]:
    """The clauses the checks compare one by one: cut at sentence ends, semicolons, colons, dashes, "but", "while",
    "although", "however", "except"."""
    return [c for c in _CLAUSE.split(text) if c and c.strip()]


# "last" that is no opposite of "first": a time ("last month", "at last") or the verb ("the warranty lasts 3 years",
# "it will last").
# "a"/"an" after an amount or a count is "per": "£1,150 a week", "3 euros an hour", "twice a day" (then the how-often
# terms: "£1,150 a week" meets "£1,150 per month" as two periods).
_RATE = re.compile(r"(\d[\d,.]*\s*(?:[a-z%]+\s+)?|\b(?:once|twice|times)\s+)an?\s+(?=(?:hour|day|week|month|quarter|year)\b)")
_LAST_AS_PREVIOUS = re.compile(r"\blast(?=\s+(?:week|month|year|night|weekend|season|summer|winter|spring|autumn|fall|time|decade|century)s?\b)|(?<=\bat\s)last\b"
                               r"|\blast(?:s|ed|ing)\b|(?P<verb>\b(?:will|to|can|could|should|may|might|would|does|do|did|must|not)\s+)last\b")

# A clause that ends on its negated auxiliary leaves its predicate to the clause before: "Towels are provided, but
# water bottles are not." says "water bottles are not provided".
_AUX = r"(?:is|are|was|were|do|does|did|can|could|will|would|should|must|may|has|have|had)"
_ENDS_NEGATED = re.compile(rf"\b(?:(?:{_AUX}|shall|might|need)\s+not|[a-z]+n[’']t|cannot)\s*[.!;,]*\s*$", re.IGNORECASE)
_ENDS_AFFIRMED = re.compile(rf"\b{_AUX}\s*[.!;,]*\s*$", re.IGNORECASE)
# ... and the predicate a negation denies, for an affirmation that leaves it out ("are not [allowed on site]").
_DENIED_PREDICATE = re.compile(rf"\b(?:{_AUX}\s+(?:not|never)|cannot|[a-z]+n[’']t)\s+(?P<rest>\w.*?)[\s.!;,]*$", re.IGNORECASE)
_PREDICATE = re.compile(rf"\b{_AUX}\s+(?!not\b)(?P<rest>\w.*?)[\s.!;,]*$", re.IGNORECASE)


# "Alcohol is permitted in the courtyard bar but not in the rooms": what the clause before says of its subject, up to
# the place or the time it names.
_SAID_OF = re.compile(rf"^\s*(?:yes,?\s+)?(?P<subject>.+?)\s+(?P<aux>{_AUX})\s+(?P<predicate>(?:[\w-]+\s+){{0,2}}?[\w-]+)\s+"
                      r"(?:in|on|at|inside|outside|during|after|before)\b", re.IGNORECASE)
_NOT_A_PLACE = re.compile(r"^\s*not\s+(?=(?:in|on|at|inside|outside|during|after|before)\b)", re.IGNORECASE)


def _elided(parts: list[str]) -> list[str]:
    """The clauses with a predicate an ellipsis leaves out filled in from the clause before: a negation's ("..., but
    gloves are not" = not provided), or an affirmation's, without the negation it denies ("Glass bottles are not
    allowed, but sealed plastic bottles are" = allowed), and the denial of another place or time ("permitted in the
    courtyard bar but not in the rooms" = not permitted in the rooms)."""
    out = list(parts)
    for i in range(1, len(out)):
        if (denial := _NOT_A_PLACE.match(out[i])) is not None and (said := _SAID_OF.match(parts[i - 1])) is not None:
            out[i] = f"{said.group('subject')} {said.group('aux')} not {said.group('predicate')} {out[i][denial.end():]}"
        elif _ENDS_NEGATED.search(out[i]) and (before := _PREDICATE.search(parts[i - 1])) is not None:
            out[i] = f"{out[i].rstrip(' .!;,')} {before.group('rest')}"
        elif _ENDS_AFFIRMED.search(out[i]) and len(out[i].split()) >= 2 and (denied := _DENIED_PREDICATE.search(parts[i - 1])) is not None:
            out[i] = f"{out[i].rstrip(' .!;,')} {denied.group('rest')}"
    return out



def polarity_conflicts(claim: str, best: Window, *, lossy: bool = False) -> list[str]:
    """Why each clause of the claim turns its evidence clause in `best` around (negation, opposite, order).
    `lossy`: the evidence's document lost words in extraction (lossy.py), so a negation it lacks may be one it lost."""
    read = [(c, _terms(c)) for c in _elided(clauses(best.text))]
    evidence_clauses = [(c, _words(c, terms), terms) for c, terms in read]
    sentences = [(s, _words(s)) for s in STOP_BREAK.split(best.text) if s.strip()]
    window_terms = [t for _, _, terms in evidence_clauses for t in terms]
    evidence_clauses = [e for e in evidence_clauses if e[1]]
    out: list[str] = []
    denials: _Denials | None = None  # computed once, for the first claim clause that needs it
    warned = bool(_words(claim) & _WARNING)  # the claim warns against something ("opening the lid while boiling is dangerous")
    for clause in _elided(clauses(claim)):
        clause_terms = _terms(clause)
        words = _words(clause, clause_terms)
        if len(words) < MIN_CLAUSE_OVERLAP:
            continue
        overlap = {i: len(words & e[1]) for i, e in enumerate(evidence_clauses)}
        most = max(overlap.values(), default=0)
        if most < MIN_CLAUSE_OVERLAP or most < 0.5 * len(words):
            # No clause holds enough of it; the sentence may ("approved plans for a new swimming pool as part of the
            # budget" / "The budget includes ..., but a proposal to build a new swimming pool was rejected").
            across = _opposite_acrossclauses(clause, clause_terms, words, most, sentences)
            if across:
                out.append(across)
            elif most >= MIN_CLAUSE_OVERLAP:
                # or the claim adds a condition of another sentence to what one clause denies ("medicine students
                # can apply if they meet the income limit" / "income below £40,000. Medicine students are not eligible")
                denials = denials or _denials([terms for _, _, terms in evidence_clauses])
                content = _plain_content(clause_terms)
                denied = _denied_permission(clause_terms, content, denials) if content is not None else None
                if denied:
                    out.append(f"negation: {denied}")
            continue
        # Every evidence clause that holds the claim clause as well as the best one must turn it around.
        reasons = []
        for i in (i for i, n in overlap.items() if n == most):
            text, held, terms = evidence_clauses[i]
            flips, why = _flips(clause, text, clause_terms, terms, words & held, window_terms, warned=warned, lossy=lossy)
            if not flips:
                break
            reasons.append(why)
        else:
            out.append(reasons[0])
            continue
        across = _opposite_acrossclauses(clause, clause_terms, words, most, sentences)
        if across:
            out.append(across)
            continue
        if denials is None:
            denials = _denials([terms for _, _, terms in evidence_clauses])
        denied = _asserts_the_denied_part(clause_terms, denials)
        if denied:
            out.append(f"negation: {denied}")
    return out


def _opposite_acrossclauses(clause: str, clause_terms: list[str], words: set[str], best_overlap: int,
                             sentences: list[tuple[str, set[str]]]) -> str | None:
    """An opposite the claim clause meets only in the evidence sentence as a whole: "Dogs are banned from the trail
    between April and July" against "Dogs are allowed on the trail but must be kept on a lead between April and
    July" -- the claim joins the two clauses, so neither clause alone holds both the shared words and the opposite.
    Only where the sentence holds more of the claim clause than its best clause does, and only opposites (a
    negation's scope does not reach across a clause)."""
    text, held = max(sentences, key=lambda s: len(words & s[1]), default=("", set()))
    shared = words & held
    if len(shared) <= best_overlap or len(shared) < 0.5 * len(words):
        return None
    flips, why = _flips(clause, text, clause_terms, _terms(text), shared, opposites_only=True)
    return why if flips else None


@dataclass(frozen=True, slots=True)
class _Denial:
    """One negation of the window: what it governs, and the content words its clause says before it."""

    scope: list[str]  # its next content words ("not [cover flood damage]")
    subject: frozenset[str]  # its clause's words before it ("tickets bought at the station [cannot be refunded]")
    elliptical: bool  # it opens a clause that follows another ("..., but not on express trains"): that clause's verb
    prohibited: frozenset[str]  # what a prohibition forbids: a command's object ("Never use [vinegar]"), a modal's subject ("[glass] must not go ...")


@dataclass(frozen=True, slots=True)
class _Denials:
    """The window's negations, the content words it says outside every negation's scope, and the words of its
    clauses that negate nothing."""

    denials: list[_Denial]
    affirmed: set[str]
    plain: set[str]


def _denials(evidence_clauses: list[list[str]]) -> _Denials:
    denials: list[_Denial] = []
    plain: set[str] = set()
    for index, terms in enumerate(evidence_clauses):
        scopes = _negated(terms, set())[0]
        first = next((i for i, t in enumerate(terms) if t in _NEGATION_WORDS), 0)
        subject = frozenset(t for t in terms[:first] if t not in STOPWORDS and len(t) > 1)
        if not scopes:
            plain.update(t for t in terms if t not in STOPWORDS and len(t) > 1)
        denials.extend(_Denial(scope, subject, not subject and index > 0, _prohibited(terms, first, subject, scope)) for scope in scopes)
    return _Denials(denials, {t for terms in evidence_clauses for t in _affirmed(terms)}, plain)


def _prohibited(terms: list[str], first: int, subject: frozenset[str], scope: list[str]) -> frozenset[str]:
    """What the clause's negation forbids, when it is a prohibition: the object of a command ("Never use [vinegar]",
    "Do not open [the lid]"), or the subject of a modal's negation ("[Glass] must not go in the blue bin") -- not one
    in a relative clause ("a runner who cannot start may defer their entry")."""
    if not subject and (terms[:1] == ["never"] or terms[:2] == ["do", "not"]):
        return frozenset(scope[1:])
    if first >= 2 and terms[first - 1] in _MODALS and terms[first - 2] not in ("who", "which", "that"):
        head = terms[: first - 1]  # the modal's own subject: after a "that" ("The EEOC says that [pregnancy] should not ...")
        start = max((i + 1 for i, t in enumerate(head) if t in ("that", "whether", "if", "when")), default=0)
        return frozenset(t for t in head[start:] if t in subject)
    return frozenset()


def _asserts_the_denied_part(claim_terms: list[str], window: _Denials) -> str | None:
    """A claim that joins what a sentence affirms with what it denies: "The policy covers flood damage as well as
    theft and fire" against "The policy covers theft and fire damage but does not cover flood damage".  The clause
    comparison above sees the affirmed clause (it shares the most words) and agrees; here, a word of the claim that
    the window says only under a negation whose verb the claim affirms ("not [cover] flood") is what the claim
    asserts and the evidence denies -- provided the window also affirms that verb (the claim took the affirmed
    clause for the whole sentence) and the claim itself negates nothing.  The word named is the denied one.
    The denied word may also be the negated clause's subject ("tickets bought online can be refunded; tickets
    bought at the station cannot be refunded" / "tickets bought at the station can be refunded"), or, where the
    negation opens a clause without a verb of its own, what it governs ("allowed on regional trains but not on
    express trains" / "allowed on express trains")."""
    claim_content = _plain_content(claim_terms)
    if claim_content is None or not window.denials:
        return None
    permission = _denied_permission(claim_terms, claim_content, window)
    if permission:
        return permission
    for denial in window.denials:
        verb = denial.scope[0]
        if verb in claim_content and verb in window.affirmed:
            denied = [t for t in denial.scope[1:] if t in claim_content and t not in window.affirmed]
            if not denied and verb in window.plain:
                denied = sorted(t for t in denial.subject if t in claim_content and t not in window.plain)
            if denied:
                return denied[0]
        elif denial.elliptical and len(claim_content & window.plain) >= 2:
            denied = [t for t in denial.scope if t in claim_content and t not in window.plain]
            if denied:
                return denied[0]
    return None


def _plain_content(terms: list[str]) -> set[str] | None:
    """A claim's content words, or None when it negates something itself (then it asserts no denied part)."""
    content = {t for t in terms if t not in STOPWORDS and len(t) > 1}
    if _negated(terms, set())[0] or content & (_NEGATION_WORDS | _CESSATION | _WARNING):
        return None
    return content


def _denied_permission(claim_terms: list[str], claim_content: set[str], window: _Denials) -> str | None:
    """What the window says is not possible, said to be possible: "Yes, you can cancel by phone" against "Members may
    cancel after the minimum term; cancellations by phone are not accepted" -- a denial of a permission word
    (accepted, allowed, eligible, available ...) or a prohibition, and a claim that answers "Yes" or says "can" a few
    words from what it names of the denied clause -- a word the window says nowhere outside a negated clause ("can
    lead to" far from it is no permission)."""
    if claim_terms[:1] == ["yes"]:
        said = claim_content
    else:
        said = {t for i, t in enumerate(claim_terms) if t in claim_content
                and any(w in _POSSIBLE for w in claim_terms[max(0, i - _NEAR_POSSIBLE) : i + _NEAR_POSSIBLE + 1])}
    if not said or _sets_apart(claim_terms):
        return None
    for denial in window.denials:
        if denial.scope[0] in _PERMISSION or denial.prohibited:
            about = (denial.subject | set(denial.scope[1:]) if denial.scope[0] in _PERMISSION else denial.prohibited) & said
            denied = sorted(t for t in about if t not in window.plain)
            if denied:
                return denied[0]
    return None


def _sets_apart(terms: list[str]) -> bool:
    """The claim excludes something itself ("medicines other than controlled ones can be delivered")."""
    return bool(_EXCLUDING.intersection(terms)) or any(a == "other" and b == "than" for a, b in zip(terms, terms[1:]))


def _affirmed(terms: list[str]) -> set[str]:
    """The content words of a clause outside the scopes of its negations (and not the negations themselves)."""
    out: set[str] = set()
    skip = 0
    for term in terms:
        if term in _NEGATION_WORDS:
            skip = _SCOPE
            continue
        if skip:
            skip -= 1
            continue
        if term not in STOPWORDS and len(term) > 1:
            out.add(term)
    return out


def _flips(claim: str, evidence: str, claim_terms: list[str], evidence_terms: list[str], shared: set[str],
           window_terms: Sequence[str] = (), *, opposites_only: bool = False, warned: bool = False,
           lossy: bool = False) -> tuple[int, str]:
    """How the claim clause turns the evidence clause around: (1 when it does, else 0; the reasons).

    Opposites first ("decreased" / "increased", "unclear" / "clear").  A negation whose first word is one side of an
    opposite turns that opposite back ("will not change" = "will remain the same": agreement).  The other negations:
    a clause negating what both say, against one negating nothing, is a mismatch ("never mix this medicine with
    alcohol" / "you can take this medicine with alcohol"); both negating, however worded, agree; a negation the claim
    shares with another clause of the window (the same first word, or two words of its scope) is that clause's."""
    reasons: list[str] = []
    claim_set, evidence_set = set(claim_terms), set(evidence_terms)
    # What an opposite must stand next to on both sides: the shared words, and the numbers both write ("a [minimum] of
    # 25%" / "a [maximum] of 25%": the quantity is what the opposite qualifies).
    anchors = shared | {t for t in claim_set & evidence_set if t[0].isdigit()}
    pairs: list[tuple[str, str]] = []
    spanned = _in_ranges(evidence) if claim_set & _CALENDAR else frozenset()
    for term in claim_terms:
        # A claim word the evidence also has is no opposite of it -- unless it stands there away from what both say,
        # with its opposite where the claim has it: "disabled by default and can be enabled in the admin panel".
        # Nor is a month or a day inside a span the evidence states ("in July" / "from May to September").
        if (term in evidence_set and _anchors_near(evidence_terms, term, anchors - {term}, width=3)) or any(term in p for p in pairs) \
                or not _anchors_near(claim_terms, term, anchors) or term in spanned:
            continue
        for opposite in (*_OPPOSITES.get(term, ()), _prefixed_opposite(term, evidence_set)):
            if opposite and opposite in evidence_set and opposite not in claim_set and not any(opposite in p for p in pairs) \
                    and _anchors_near(evidence_terms, opposite, anchors) & _anchors_near(claim_terms, term, anchors):
                pairs.append((term, opposite))
                break
    turned = {w for p in pairs for w in p}
    # Both sides saying "unless" (= "if not") compare it as it stands: "advises against it unless you have crampons" /
    # "is not recommended unless hikers carry crampons" agree, though only the second folds into an assertion.
    fold_unless = not (_says_unless(claim_terms) and _says_unless(evidence_terms))
    claim_heads, claim_turned = _negated(claim_terms, turned, fold_unless=fold_unless)
    evidence_heads, evidence_turned = _negated(evidence_terms, turned, fold_unless=fold_unless)
    for term, opposite in pairs:
        if not ((term in claim_turned) ^ (opposite in evidence_turned)):
            reasons.append(f"opposite: {_shown(term)} vs {_shown(opposite)}")
    if opposites_only:
        return (1 if reasons else 0), " + ".join(reasons)
    claim_negates, evidence_negates = _governs(claim_heads, shared), _governs(evidence_heads, shared)
    plain_side, negating_side = (evidence_set, claim_set) if claim_negates else (claim_set, evidence_set)
    ceased = bool((plain_side & _CESSATION) - negating_side)  # "removed support for X" = "X is no longer supported"
    scant = bool(plain_side & _SCANT)  # "could make little headway" = "was unable to make much headway"
    # "Failure to latch the tailgate could result in damage" warns to latch it: "ensure the tailgate is latched"
    consequence = bool(negating_side & _FAILURE) and bool(negating_side & _CONSEQUENCE)
    # a warning against what the other side forbids ("dangerous" / "never"; the claim's anywhere in its sentence)
    warned_against = (bool(plain_side & _WARNING) or (warned and not claim_negates)) and bool({"never", "do"} & negating_side)
    lost = lossy and claim_negates  # the evidence's negation may be a word its extraction lost
    # "you cannot smoke in the courtyard" / "smoking is forbidden ... including the courtyard": a possibility denied on
    # one side, a prohibition worded on the other
    forbidden = bool(plain_side & _PROHIBITION) and bool(negating_side & _POSSIBLE) and not negating_side & _PROHIBITION
    if claim_negates != evidence_negates and not (claim_heads and evidence_heads) and not ceased and not scant and not warned_against \
            and not consequence and not lost and not forbidden:
        own = claim_heads if claim_negates else []
        if not any(_same_negation(mine, theirs) for mine in own for theirs in _negated(list(window_terms), turned)[0]):
            reasons.append("negation")
    # What the evidence forbids in a word, claimed to be possible: "You can have a barbecue on the roof terrace" /
    # "Barbecues are forbidden everywhere, including the roof terrace" (neither side has a negation).
    prohibitions = evidence_set & _PROHIBITION
    if prohibitions and not (claim_heads or claim_turned or evidence_heads or evidence_turned) and not reasons and claim_set & _POSSIBLE \
            and not claim_set & _PROHIBITION and any(_anchors_near(evidence_terms, t, shared) for t in prohibitions):
        reasons.append(f"negation: {min(prohibitions)}")
    # What the evidence says was removed, claimed to be there: "Yes, you can export to PDF" / "Exports to PDF were
    # removed in this version" (neither side negates; the cessation is the evidence's negation).
    removed = _REMOVED.search(evidence)
    if removed and not claim_negates and not evidence_negates and claim_set & ({"can", "could"} | _PERMISSION) and not claim_set & _CESSATION \
            and not reasons:
        reasons.append(f"negation: {removed.group(1).lower()}")
    order = reversed_order(claim, evidence, shared, _words)
    if order:
        reasons.append(order)
    return (1 if reasons else 0), " + ".join(reasons)


_CALENDAR = frozenset(stem(w) for w in (*MONTHS, *WEEKDAYS))
_NAMES_OF_WHEN = "|".join((*MONTHS, *WEEKDAYS))
_SPAN = re.compile(rf"\b(?:between\s+({_NAMES_OF_WHEN})s?\s+and|({_NAMES_OF_WHEN})s?\s*(?:to|until|till|through|-|–))\s*"
                   rf"({_NAMES_OF_WHEN})s?\b", re.IGNORECASE)


def _in_ranges(text: str) -> frozenset[str]:
    """The months and days inside the spans a text states, ends included, by stem: "from May to September" and
    "between May and September" hold June, July and August; "Monday to Friday" holds Wednesday ("in May and
    September" is two months, no span)."""
    out: set[str] = set()
    for match in _SPAN.finditer(text):
        first, last = (match.group(1) or match.group(2)).lower(), match.group(3).lower()
        for cycle in (MONTHS, WEEKDAYS):
            if first in cycle and last in cycle:
                i, j = cycle.index(first), cycle.index(last)
                out.update(stem(cycle[(i + k) % len(cycle)]) for k in range((j - i) % len(cycle) + 1))
    return frozenset(out)


def _shown(term: str) -> str:
    """A term as a reason names it: "at least", "monthly", "only"."""
    if term == "only_to":
        return "only"
    return f"{term[5:]}ly".replace("dayly", "daily") if term.startswith("freq_") else term.replace("_", " ")


def _same_negation(mine: list[str], theirs: list[str]) -> bool:
    """Two negations' scopes deny the same thing: the same first word ("not [cover] ..." / "never [cover] ..."), or
    two words in common ("don't [pay the monthly fee]" / "pay no [monthly fee]")."""
    return mine[0] == theirs[0] or len(set(mine) & set(theirs)) >= 2


def _says_unless(terms: Sequence[str]) -> bool:
    """Does the clause hold "if not", which is how `_terms` writes "unless"?"""
    return any(term == "not" and terms[i - 1 : i] == ["if"] for i, term in enumerate(terms))


def _negated(terms: Sequence[str], turned: set[str], *, fold_unless: bool = True) -> tuple[list[list[str]], set[str]]:
    """(the scope of each negation: its next content words, in order; the opposites' words negations govern, whose
    negations are spent on turning them).  With `fold_unless`, a negation followed by "unless" asserts."""
    scopes: list[list[str]] = []
    opposites: set[str] = set()
    last: tuple[int, list[str] | None] | None = None  # the previous negation: its index, its scope
    for i, term in enumerate(terms):
        if term not in _NEGATION_WORDS:
            continue
        if (term == "without" or (fold_unless and term == "not" and terms[i - 1 : i] == ["if"])) and last is not None and i - last[0] <= _DOUBLE_NEGATION_REACH:
            # "not allowed without consent" = consent is required; "do not drive unless [= if not] the transfer case is
            # fully engaged" = drive only when it is: two negations, one assertion
            if last[1] is not None and last[1] in scopes:
                scopes.remove(last[1])
            last = None
            continue
        scope = [t for t in terms[i + 1 : i + 1 + _SCOPE] if t not in STOPWORDS and t not in _NEGATION_WORDS and len(t) > 1]
        last = (i, scope if scope and scope[0] not in turned else None) if term not in ("nor", "neither") else None
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


def _anchors_near(terms: list[str], term: str, shared: set[str], width: int = 5) -> set[str]:
    """The shared words within `width` terms of `term`.  An opposite counts only where it qualifies what both sides
    say ("[older] brother" / "[younger] brother"; "[approved] plans for a new [swimming pool]"), not as a stray
    adverb ("never been done before" / "After the launch"), and a pair must qualify the same thing on both sides:
    "[margin] fell" is no opposite of "price [rises]" in the same sentence."""
    return {t for i, t0 in enumerate(terms) if t0 == term for t in terms[max(0, i - width) : i] + terms[i + 1 : i + 1 + width] if t in shared}
