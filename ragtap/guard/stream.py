"""The guard on a stream: sentence-level hold-back, as an answer gate (the proxy's stream seam).

The relay passes every piece of answer text through `feed`, which returns the text to send now, and, when the
answer is complete, awaits `release` for the rest.  The gate cuts the text into claims (`segments.py`), checks each
complete claim against the documents as soon as it is complete, and lets text out strictly in order:

- a sentence once its check says it stands, or at its deadline unchanged (a check that fails or is late never
  holds the answer back further);
- `strip`: a sentence that trips the guard is dropped and the stream goes on (list numbering follows);
- `block`: at the first sentence that trips it, the block message goes out instead and the rest of the answer
  text is dropped (the stream's closing events still follow: the relay sends them);
- `retry` (`hold_all`): nothing is let out until the whole answer is checked; if a sentence trips it, the second
  answer (`retry`, which asks the upstream again) is checked the same way and sent if it passes, else the fallback
  (`strip` or `block`) applies to it; if there is no second answer, the fallback applies to the first.

A sentence verified between two pieces of text goes out with the next `feed`, or at once through `on_ready` when
the relay sets it (it then sends that text as it would a `feed` result).  `answer_complete` (optional) says the
answer string has closed, so its last sentence is checked without waiting for the end of the stream.
`unscorable` says the reply is not ragtap's JSON (the model ignored the instruction): like a whole reply that
cannot be scored, it then passes unchanged.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ragtap.exchange import GuardRecord
from ragtap.guard.checks import Checked
from ragtap.guard.decision import (
    BLOCKED, FAILED_OPEN, INCOMPLETE, PASSED, RETRIED, SCORER_ERROR, STRIPPED, TIMEOUT, UNSCORABLE, claim_trips,
)
from ragtap.guard.segments import Segment, SegmentCutter, Splicer
from ragtap.guard.settings import GuardSettings
from ragtap.scoring.claims import Claim
from ragtap.types import ClaimSupport

SentenceCheck = Callable[[list[Claim]], Awaitable[Checked[list[ClaimSupport]]]]
Retry = Callable[[], Awaitable[str | None]]  # the second answer's text, None when there is none (upstream error...)


@dataclass(slots=True)
class _Held:
    segment: Segment
    check: asyncio.Task[Checked[list[ClaimSupport]]] | None  # None: no claim (trailing text)
    index: int  # this claim's place in its check's batch
    submitted: float  # when its check started (its deadline counts from here)


class GuardGate:
    def __init__(self, action: str, settings: GuardSettings, check: SentenceCheck, *, retry: Retry | None = None) -> None:
        self.action = action
        self.settings = settings
        self._check = check
        self._retry = retry
        self.hold_all = action == "retry"
        self._deadline_s = settings.deadline_ms / 1000.0
        self._cutter = SegmentCutter()
        self._splicer = Splicer()
        self._entries: deque[_Held] = deque()
        self._text_ended = False
        self._releasing = False
        self._abandoned = False
        self._timer: asyncio.TimerHandle | None = None
        self._checks: set[asyncio.Task[Checked[list[ClaimSupport]]]] = set()
        self.on_ready: Callable[[str], None] | None = None  # set by a relay that can send text between feeds
        self.original: list[str] = []  # the answer as the model wrote it
        self.delivered: list[str] = []  # the answer text let out to the app
        self.blocked = False
        self.passthrough = False  # the reply cannot be scored: everything passes unchanged (`unscorable`)
        self._held_text = ""
        self.retried: str | None = None  # retry: passed | failed | error, or why the second answer was not judged
        self.trigger: str | None = None  # the claim outcome that tripped it (not_found | contradicted)
        self.checked = 0
        self.late = 0
        self.failures: Counter[str] = Counter()
        self.last_wait_s = 0.0

    # ------------------------------------------------------------------------------------------- the relay's side
    def feed(self, text: str) -> str:
        """Answer text, in order; returns the text to send now.  Complete sentences start their checks at once."""
        if self.passthrough:
            self.original.append(text)
            held, self._held_text = self._held_text, ""
            return self._emit(held + text)
        if text and not self._releasing:
            self.original.append(text)
            if not self.blocked:
                self._hold(self._cutter.feed(text))
        return self._take_ready()

    def unscorable(self, reason: str) -> None:
        """The reply cannot be scored (the model ignored the instruction: it is passed on as it came): what is
        held goes out with the next text, unchanged, and nothing more is checked."""
        if self.passthrough or self._releasing:
            return
        self.passthrough = True
        self._cancel_timer()
        self._held_text = "".join(h.segment.text for h in self._entries) + "".join(s.text for s in self._cutter.finish())
        self._entries.clear()
        for task in list(self._checks):
            task.cancel()

    def answer_complete(self) -> None:
        """The answer is complete (its last sentence can be checked now); the stream may still go on."""
        if not self._text_ended:
            self._text_ended = True
            self._hold(self._cutter.finish())
            self._push()

    async def release(self, result: object = None) -> str:
        """The stream's end: the rest of the answer text, each held sentence waited for until its deadline."""
        if self.passthrough:
            held, self._held_text = self._held_text, ""
            self._releasing = True
            return self._emit(held)
        self.answer_complete()
        self._releasing = True
        self._cancel_timer()
        if self.hold_all:
            return await self._release_whole()
        parts = [self._take_ready()]
        while self._entries:
            await self._wait_for(self._entries[0])
            parts.append(self._take_ready())
        parts.append(self._nothing_left())
        return "".join(parts)

    def abandon(self) -> None:
        """The app went away: stop checking."""
        self._abandoned = True
        self._cancel_timer()
        for task in list(self._checks):
            task.cancel()

    @property
    def delivered_text(self) -> str:
        return "".join(self.delivered)

    def record(self) -> GuardRecord:
        original = "".join(self.original)
        delivered = self.delivered_text
        return GuardRecord(
            self.action, self.outcome, self.trigger, original, None if delivered == original else delivered,
            removed_claims=self._splicer.removed, sentences_checked=self.checked, sentences_late=self.late, retry=self.retried,
            waited_ms=round(self.last_wait_s * 1000.0, 3),
        )

    @property
    def outcome(self) -> str:
        if self._abandoned:
            return INCOMPLETE
        if self.passthrough:
            return UNSCORABLE
        if self.retried == "passed":
            return RETRIED
        if self.blocked:
            return BLOCKED
        if self._splicer.removed:
            return STRIPPED
        if self.failures:
            return self.failures.most_common(1)[0][0]
        return PASSED

    # ------------------------------------------------------------------------------------------- holding
    def _hold(self, segments: list[Segment]) -> None:
        claims = [s.claim for s in segments if s.claim is not None]
        task = self._start_check(claims) if claims else None
        now = time.perf_counter()
        index = 0
        for segment in segments:
            self._entries.append(_Held(segment, task if segment.claim is not None else None, index, now))
            index += segment.claim is not None
        self._arm_timer()

    def _start_check(self, claims: list[Claim]) -> asyncio.Task[Checked[list[ClaimSupport]]]:
        task = asyncio.ensure_future(self._check(claims))
        self._checks.add(task)
        task.add_done_callback(self._check_done)
        return task

    def _check_done(self, task: asyncio.Task[Checked[list[ClaimSupport]]]) -> None:
        self._checks.discard(task)
        self._push()

    def _push(self) -> None:
        """Send what became ready between feeds, when the relay can (`on_ready`)."""
        if self.on_ready is None or self._releasing or self._abandoned:
            return
        text = self._take_ready()
        if text:
            self.on_ready(text)
        self._arm_timer()

    def _arm_timer(self) -> None:
        """Wake at the head sentence's deadline, so a late check cannot hold it longer (push mode only)."""
        self._cancel_timer()
        if self.on_ready is None or self._releasing or self.hold_all or not self._entries:
            return
        left = self._deadline_s - (time.perf_counter() - self._entries[0].submitted)
        self._timer = asyncio.get_running_loop().call_later(max(0.0, left) + 0.0005, self._push)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # ------------------------------------------------------------------------------------------- deciding
    def _decided(self, held: _Held, now: float, *, force: bool = False) -> tuple[bool, ClaimSupport | None]:
        """(decided, the claim's support): decided once its check is done or its deadline passed (or `force`).
        A failed or late check decides "no support known": the sentence is released unchanged (counted)."""
        if held.check is None or self.blocked:
            return True, None
        check = held.check
        if not check.done():
            if not force and now - held.submitted < self._deadline_s:
                return False, None
            self.late += 1
            self.failures[TIMEOUT] += 1
            self.last_wait_s = max(self.last_wait_s, now - held.submitted)
            return True, None
        self.last_wait_s = max(self.last_wait_s, now - held.submitted)
        result = None if check.cancelled() else check.result()
        if result is None or result.value is None or held.index >= len(result.value):
            failure = SCORER_ERROR if result is None or result.failure not in FAILED_OPEN else result.failure
            self.failures[failure] += 1
            self.late += failure == TIMEOUT
            return True, None
        self.checked += 1
        return True, result.value[held.index]

    def _take_ready(self) -> str:
        if self.hold_all:
            return ""
        parts = []
        now = time.perf_counter()
        while self._entries:
            done, support = self._decided(self._entries[0], now)
            if not done:
                break
            parts.append(self._apply(self._entries.popleft(), support))
        return "".join(parts)

    async def _wait_for(self, held: _Held) -> None:
        left = self._deadline_s - (time.perf_counter() - held.submitted)
        if held.check is not None and not held.check.done() and left > 0 and not self.blocked:
            await asyncio.wait({held.check}, timeout=left)

    def _trips(self, support: ClaimSupport | None) -> bool:
        return support is not None and claim_trips(support, self.settings.verdicts)

    def _apply(self, held: _Held, support: ClaimSupport | None) -> str:
        if self.blocked:
            return ""  # after the block message, the rest of the answer is not the app's
        if self._trips(support):
            assert support is not None
            self.trigger = self.trigger or support.outcome.value
            if self.action == "block":
                return self._block()
            self._splicer.drop(held.segment)
            return ""
        return self._emit(self._splicer.keep(held.segment))

    def _emit(self, text: str) -> str:
        if text:
            self.delivered.append(text)
        return text

    def _block(self) -> str:
        self.blocked = True
        return self._emit(("\n\n" if self.delivered else "") + self.settings.block_message)

    def _nothing_left(self) -> str:
        """`strip` removed every sentence of the answer: the app gets the block message, not nothing."""
        if self._splicer.removed and not self.delivered and not self.blocked:
            return self._block()
        return ""

    # ------------------------------------------------------------------------------------------- retry
    async def _judge_all(self, held: list[_Held]) -> list[ClaimSupport | None]:
        supports = []
        for h in held:
            await self._wait_for(h)
            supports.append(self._decided(h, time.perf_counter(), force=True)[1])
        return supports

    def _deliver_all(self, held: list[_Held], supports: list[ClaimSupport | None], *, strip: bool) -> str:
        return "".join(self._apply(h, s if strip else None) for h, s in zip(held, supports)) + self._nothing_left()

    async def _release_whole(self) -> str:
        """`retry`: the whole first answer was held; it goes out if nothing trips, else the second one."""
        held = list(self._entries)
        self._entries.clear()
        supports = await self._judge_all(held)
        tripped = next((s for s in supports if self._trips(s)), None)
        if tripped is None:
            return self._deliver_all(held, supports, strip=False)
        self.trigger = tripped.outcome.value
        second = await self._retry() if self._retry is not None else None
        if second is None:
            self.retried = "error"
            return self._fall_back(held, supports)
        cutter = SegmentCutter()
        segments = cutter.feed(second) + cutter.finish()
        claims = [s.claim for s in segments if s.claim is not None]
        task = self._start_check(claims) if claims else None
        now, index, again = time.perf_counter(), 0, []
        for segment in segments:
            again.append(_Held(segment, task if segment.claim is not None else None, index, now))
            index += segment.claim is not None
        again_supports = await self._judge_all(again)
        if any(self._trips(s) for s in again_supports):
            self.retried = "failed"
            return self._fall_back(again, again_supports)
        self.retried = "passed"
        return self._emit(second)

    def _fall_back(self, held: list[_Held], supports: list[ClaimSupport | None]) -> str:
        if self.settings.retry_fallback == "block":
            return self._block()
        return self._deliver_all(held, supports, strip=True)
