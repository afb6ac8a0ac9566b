"""What ragtap writes about people, made safe in one place: every writer (the capture store and its labels, the
JSONL interaction log, OpenTelemetry) passes what it writes through one `Redactor`.

Two kinds of personal data:

- **content**: message texts, documents, supporting content, answers, each claim's text and the numbers, names
  and conflicts it lists, label notes.  Every match of a `[privacy] redact` regex is replaced by
  `redact_replacement`, taken as plain text (never a regex template: `\\1` is not expanded).  The defaults catch
  e-mail addresses, IBANs, payment card numbers, international phone numbers and API keys.
- **identity**: the user and session ids (often e-mail addresses), from headers or the OpenAI `user` /
  `safety_identifier` / `metadata` fields.  `identity = "hashed"` (the default) writes `h:` and 16 hex digits of
  HMAC-SHA256 under a per-install salt: the same person gets the same id everywhere ragtap writes it (the
  triage page can filter by it, and hashes the id a person types the same way), and the id cannot be read back.
  `"clear"` writes ids as given; `"none"` writes none.

The per-install salt is 32 random bytes kept in a file (`<data dir>/identity.salt`, mode 0600), created once
by whichever ragtap process gets there first (several processes on one machine share it); `identity_salt`
in the config (or `RAGTAP_IDENTITY_SALT`) replaces it, e.g. so that replicas on several machines agree.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import logging
import os
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ragtap.types import Assessment, ClaimSupport, Document, Interaction

log = logging.getLogger("ragtap.privacy")

IDENTITY_MODES = ("hashed", "clear", "none")
HASH_PREFIX = "h:"
_HASHED = re.compile(r"h:[0-9a-f]{16}")
# The defaults: what is personal or secret wherever it appears, with few false positives in RAG text.
DEFAULT_REDACT: tuple[str, ...] = (
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",  # e-mail addresses
    r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b",  # IBANs (DE89 3704 0044 0532 0130 00)
    r"\b\d(?:[ -]?\d){12,18}\b",  # payment card numbers: 13 to 19 digits, spaces or dashes between groups
    r"\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d(?:[ .-]?\d){5,13}\b",  # international phone numbers (+44 20 7946 0958)
    r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,}",  # API keys (sk-...)
)
# Texts a pattern is tried on at start: one that matches the empty string in any of them would put the
# replacement between every character.
_EMPTY_PROBES = ("", "a", "ab cd", "0 1", "@.-_", "x\ny")


@dataclass(frozen=True)
class PrivacySettings:
    """`[privacy]`: the regexes whose matches are replaced in every text ragtap writes, and how user and session
    ids are written (`hashed`, `clear`, `none`)."""

    redact: tuple[str, ...] = DEFAULT_REDACT
    redact_replacement: str = "[redacted]"
    identity: str = "hashed"
    identity_salt: str | None = None  # None: the per-install salt file in the data directory


def settings_problem(settings: PrivacySettings) -> str | None:
    """One line naming the first setting that would break redaction (or the rows it writes), or None."""
    if settings.identity not in IDENTITY_MODES:
        return f"privacy.identity: expected one of {', '.join(IDENTITY_MODES)} (got {settings.identity!r})"
    if settings.identity_salt is not None and len(settings.identity_salt) < 16:
        return "privacy.identity_salt: expected at least 16 characters (a short salt makes hashed ids guessable)"
    reference = re.search(r"\\(?:\d|g<[^>]*>)", settings.redact_replacement)
    if reference:
        return (f"privacy.redact_replacement: plain text only, {reference.group(0)!r} would be written as it is "
                f"(got {settings.redact_replacement!r})")
    for pattern in settings.redact:
        try:
            compiled = re.compile(pattern)
        except re.error as error:
            return f"privacy.redact: {pattern!r} is not a valid regex ({error})"
        if any(m.end() == m.start() for probe in _EMPTY_PROBES for m in compiled.finditer(probe)):
            return (f"privacy.redact: {pattern!r} matches the empty string (it would put the replacement between "
                    "every character): make it match at least one character")
        if compiled.search(settings.redact_replacement):
            return (f"privacy.redact: {pattern!r} matches the replacement {settings.redact_replacement!r} itself: "
                    "choose a replacement it does not match")
    return None


def install_salt(path: Path) -> bytes:
    """The per-install salt at `path`, created (32 random bytes, hex, mode 0600) when there is none yet.

    Several processes may start together: each writes its own temporary file and links it into place; the one
    whose link fails reads the winner's, so all of them hash with the same salt."""
    with contextlib.suppress(FileNotFoundError):
        return _read_salt(path)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(32) + "\n")
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    return _read_salt(path)


def _read_salt(path: Path) -> bytes:
    text = path.read_text(encoding="ascii").strip()
    if len(text) < 32:
        raise OSError(f"{path} does not hold a salt (expected 64 hex digits)")
    return text.encode()


class Redactor:
    """The one redaction every writer applies.  Thread-safe (no state changes after construction): the store's
    writer thread, the JSONL writer thread and the event loop (OpenTelemetry) share one instance."""

    def __init__(self, patterns: Iterable[str] = (), replacement: str = "[redacted]", *, identity: str = "clear",
                 salt: bytes | None = None) -> None:
        self._patterns = tuple(re.compile(p) for p in patterns)
        self._replacement = replacement
        if identity not in IDENTITY_MODES:
            raise ValueError(f"identity: expected one of {', '.join(IDENTITY_MODES)} (got {identity!r})")
        if identity == "hashed" and not salt:
            raise ValueError("hashed identities need a salt")
        self.identity_mode = identity
        self._salt = salt or b""

    @classmethod
    def from_settings(cls, settings: PrivacySettings, salt: bytes | None) -> Redactor:
        return cls(settings.redact, settings.redact_replacement, identity=settings.identity, salt=salt)

    # --- the two primitives --------------------------------------------------------------------------------------
    def _replace(self, match: re.Match[str]) -> str:
        # A zero-length match (a pattern that slipped past the start-up check) replaces nothing.
        return self._replacement if match.end() > match.start() else ""

    def text(self, value: str) -> str:
        """`value` with every match of every pattern replaced (the replacement is plain text)."""
        for pattern in self._patterns:
            value = pattern.sub(self._replace, value)
        return value

    def identity(self, value: str | None) -> str | None:
        """A user or session id as it may be written: hashed (`h:` + 16 hex), as given, or None."""
        if value is None or self.identity_mode == "none":
            return None
        if self.identity_mode == "clear":
            return value
        if _HASHED.fullmatch(value):  # already hashed (a filter pasted from the page): the same id
            return value
        digest = hmac.new(self._salt, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
        return HASH_PREFIX + digest[:16]

    # --- typed records ---------------------------------------------------------------------------------------------
    def optional(self, value: str | None) -> str | None:
        return None if value is None else self.text(value)

    def documents(self, documents: tuple[Document, ...]) -> tuple[Document, ...]:
        return tuple(Document(self.text(d.text), d.id) for d in documents)

    def claims(self, claims: tuple[ClaimSupport, ...], answer: str | None, supporting: str | None,
               documents: tuple[Document, ...] = ()) -> tuple[ClaimSupport, ...]:
        """The claims with their texts and listed numbers / names / conflicts redacted; offsets point into the
        redacted `answer` / `supporting` (already redacted by the caller).  `documents`: the original (unredacted)
        documents, whose evidence windows the conflicts quote.

        The lists hold pieces of the claim, not its text: a phone number `+44 20 7946 0958` is listed as `7946`,
        `0958`, an IBAN as its lower-cased code, which no pattern matches alone.  So every piece that was part of
        a redacted match in the claim (or its evidence) is replaced too."""
        if not self._patterns:
            return claims
        out = []
        for claim in claims:
            source = (answer if claim.of == "answer" else supporting) or ""
            text = self.text(claim.text)
            # Offsets are kept where the redacted source still holds the redacted claim there; else the claim is
            # looked up again (redaction before it shifted it); not found: an empty span (nothing highlighted).
            where = claim.start if source[claim.start:claim.end] == text else source.find(text)
            start, end = (where, where + len(text)) if where >= 0 else (0, 0)
            secrets = self._secrets(claim.text, _evidence(claim, documents))
            out.append(dataclasses.replace(
                claim, text=text, start=start, end=end, missing_numbers=self._scrub(claim.missing_numbers, secrets),
                missing_names=self._scrub(claim.missing_names, secrets), conflicts=self._scrub(claim.conflicts, secrets)))
        return tuple(out)

    def _secrets(self, *texts: str) -> frozenset[str]:
        """The words and numbers (lower-cased) inside the matches of the patterns in `texts`."""
        found: set[str] = set()
        for text in texts:
            for pattern in self._patterns:
                for match in pattern.finditer(text):
                    found.update(token.lower() for token in _TOKEN.findall(match.group(0)))
        return frozenset(found)

    def _scrub(self, values: tuple[str, ...], secrets: frozenset[str]) -> tuple[str, ...]:
        def piece(match: re.Match[str]) -> str:
            return self._replacement if match.group(0).lower() in secrets else match.group(0)

        return tuple(_TOKEN.sub(piece, self.text(v)) if secrets else self.text(v) for v in values)

    def interaction(self, interaction: Interaction) -> Interaction:
        """The interaction's texts redacted (question, documents, supporting content, answer, the input line)."""
        record = interaction.record
        if record is not None:
            record = _redact_record(record, self.text)
        return dataclasses.replace(
            interaction, question=self.text(interaction.question), documents=self.documents(interaction.documents),
            supporting=self.optional(interaction.supporting), answer=self.optional(interaction.answer), record=record)

    def assessment(self, assessment: Assessment, answer: str | None, supporting: str | None,
                   documents: tuple[Document, ...] = ()) -> Assessment:
        """The assessment with its claims redacted against the redacted answer and support (and the refusal
        phrase, which quotes the answer); `documents` as in `claims`."""
        return dataclasses.replace(assessment, claims=self.claims(assessment.claims, answer, supporting, documents),
                                   refusal_phrase=self.optional(assessment.refusal_phrase))


_TOKEN = re.compile(r"[^\W_]+")  # a word or a number: the pieces claims list


def _evidence(claim: ClaimSupport, documents: tuple[Document, ...]) -> str:
    """The evidence window a claim was aligned with (its conflicts quote it), or ""."""
    index = claim.evidence_document
    if index is None or not 0 <= index < len(documents) or claim.evidence_start is None or claim.evidence_end is None:
        return ""
    return documents[index].text[claim.evidence_start:claim.evidence_end]


_RECORD_TEXTS = ("question", "answer", "supporting", "supporting_content")


def _redact_record(record: dict[str, object], text: Callable[[str], str]) -> dict[str, object]:
    """An input line's texts redacted (`ragtap score` echoes the line it read)."""
    out = dict(record)
    for key in _RECORD_TEXTS:
        if isinstance(out.get(key), str):
            out[key] = text(out[key])  # type: ignore[arg-type]
    for key in ("documents", "retrieved"):
        value = out.get(key)
        if isinstance(value, list):
            out[key] = [text(d) if isinstance(d, str) else {**d, "text": text(d["text"])} if isinstance(d, dict) and isinstance(d.get("text"), str) else d
                        for d in value]
    return out


NO_REDACTION = Redactor()  # programmatic users (tests, embedding apps) that build writers by hand
