"""The stemmer every lexical comparison shares (words, and the nouns that say what a number counts)."""

from __future__ import annotations

import functools

# The calendar's closed classes, for the checks that compare dates and the names that are no one's.
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december")
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

_UNDOUBLED = frozenset("bdgkmnprt")  # not f, l, s, z: "staffed", "called", "missed", "buzzed" keep theirs


# Irregular past forms, to their verb: "was taught" / "teaches", "led" / "leads", "rose" / "fell" (rise / fall: opposites).
# Not the ambiguous ones: "left" (the side), "found" (to found a company), "lay", "saw" (the tool), "bore", "wound".
_IRREGULAR = {
    past: verb
    for verb, forms in {
        "teach": "taught", "lead": "led", "build": "built", "write": "wrote written", "buy": "bought", "sell": "sold",
        "make": "made", "give": "gave given", "take": "took taken", "begin": "began begun", "win": "won", "lose": "lost",
        "hold": "held", "run": "ran", "see": "seen", "say": "said", "tell": "told", "pay": "paid", "keep": "kept",
        "meet": "met", "spend": "spent", "send": "sent", "bring": "brought", "think": "thought", "catch": "caught",
        "fight": "fought", "choose": "chose chosen", "drive": "drove driven", "rise": "rose risen", "fall": "fell fallen",
        "grow": "grew grown", "know": "knew known", "fly": "flew flown", "eat": "ate eaten", "break": "broke broken",
        "speak": "spoke spoken", "steal": "stole stolen", "freeze": "froze frozen", "hide": "hid hidden",
        "strike": "struck stricken", "stand": "stood", "understand": "understood", "become": "became", "come": "came",
        "go": "went gone", "get": "got gotten", "sing": "sang sung", "swim": "swam swum", "ring": "rang rung",
        "draw": "drew drawn", "throw": "threw thrown", "shake": "shook shaken", "forget": "forgot forgotten",
        "forgive": "forgave forgiven", "feel": "felt", "sleep": "slept", "sweep": "swept", "mean": "meant",
        "lend": "lent", "bend": "bent", "deal": "dealt", "seek": "sought", "sit": "sat", "shoot": "shot", "hang": "hung",
        "dig": "dug", "stick": "stuck", "swing": "swung", "wake": "woke woken", "wear": "wore worn", "tear": "tore torn",
        "bite": "bit bitten", "ride": "rode ridden", "arise": "arose arisen", "undertake": "undertook undertaken",
        "withdraw": "withdrew withdrawn", "overcome": "overcame", "withhold": "withheld", "uphold": "upheld",
    }.items()
    for past in forms.split()
}
IRREGULAR_PAST = frozenset(_IRREGULAR)  # "rose", "led", "taught": a verb, wherever it stands


# Cached: a text's words repeat across its claims, windows and documents (a quarter of a million calls for 600
# long-document interactions, a few thousand distinct words); bounded like the other scoring caches.
@functools.lru_cache(maxsize=32768)
def stem(word: str) -> str:
    """A light suffix stripper: enough for latch/latches, tighten/tightened, check/checking, (a final "e" dropped
    from longer words) increase/increased/increasing, and the nouns made of verbs with -ation, -ment, -ance
    (installation/install, agreement/agree, attendance/attend; at least four letters are left, so "payment" stays), and
    the consonant a verb doubles before -ed/-ing undoubled (banned/ban, stopping/stop); irregular past forms are their
    verb's (taught/teach, fell/fall)."""
    word = _IRREGULAR.get(word, word)
    for suffix, keep in (("ies", "y"), ("ings", ""), ("ing", ""), ("ed", ""), ("es", ""), ("ly", ""), ("s", "")):
        if suffix == "es" and not word.endswith(("sses", "xes", "zes", "ches", "shes")):
            continue  # "boxes" -> "box", but "cases" -> "case" (the "s" rule)
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: len(word) - len(suffix)] + keep
            if suffix in ("ed", "ing", "ings") and len(word) >= 4 and word[-1] == word[-2] and word[-1] in _UNDOUBLED:
                word = word[:-1]  # "banned" -> "ban", "stopping" -> "stop"; not "added" ("ad"), "staffed", "called"
            break
    for suffix in ("ation", "ment", "ance"):  # "installation"/"install", "agreement"/"agree"
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: len(word) - len(suffix)]
    if word.endswith("e") and len(word) >= 5 and not word.endswith("ee"):
        word = word[:-1]
    return word
