"""The guard on a stream: sentence-level hold-back.

A relay hands the guard the answer's text as it arrives (`text`) and every other event of the stream in its place
(`event`, built only when its turn comes, so that numbering and the text it repeats are the delivered ones).  The
guard cuts the text into claims (`segments.py`), checks each complete claim against the documents as soon as it
is complete, and writes, strictly in order:

- a sentence once its check says it stands (or at its deadline, unchanged: a check that fails or is late never
  holds the answer back further);
- `strip`: a sentence that trips the guard is dropped, the stream goes on (list numbering follows);
- `block`: at the first sentence that trips it, the block message goes out instead and the rest of the answer
  text is dropped; the stream's other events (the finish, the usage) still follow, so it ends as usual;
- `retry` (`hold_all`): nothing is written until the whole answer is checked; if a sentence trips it, the
  second answer (`retry`, asked for by the relay) is checked the same way and written if it passes, else the
  fallback (`strip` or `block`) applies to it; if there is no second answer, the fallback applies to the first.

The first answer text thus waits for one sentence and its check.  Events queued behind held text wait too;
comments (keep-alives) do not need the guard and are written by the relay directly.
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
    BLOCKED,
    FAILED_OPEN,
    INCOMPLETE,
    PASSED,
    RETRIED,
    STRIPPED,
    claim_trips,
)
from ragtap.guard.segments import Segment, SegmentCutter, Splicer
from ragtap.guard.settings import GuardSettings
from ragtap.scoring.claims import Claim
from ragtap.types import ClaimSupport

SentenceCheck = Callable[[list[Claim]], Awaitable[Checked[list[ClaimSupport]]]]
Write = Callable[[bytes], Awaitable[None]]
Retry = Callable[[], Awaitable[str | None]]  # the second answer's text, None when there is none (upstream error...)


@dataclass(slots=True)
class _Held:
    segment: Segment
    check: asyncio.Task[Checked[list[ClaimSupport]]] | None  # None: no claim (trailing text)
    index: int  # this claim's place in its check's batch
    submitted: float  # when its check started (its deadline counts from here)


@dataclass(slots=True)
class _Event:
    build: Callable[[], bytes | None]


class StreamGuard:
    def __init__(
        self, action: str, settings: GuardSettings, check: SentenceCheck, write: Write, encode_text: Callable[[str], bytes],
        *, retry: Retry | None = None,
    ) -> None:
        self.action = action
        self.settings = settings
        self._check = check
        self._write = write
        self._encode = encode_text
        self._retry = retry
        self.hold_all = action == "retry"
        self._deadline_s = settings.deadline_ms / 1000.0
        self._cutter = SegmentCutter()
        self._splicer = Splicer()
        self._entries: deque[_Held | _Event] = deque()
        self._wake = asyncio.Event()
        self._text_ended = False
        self._closed = False
        self._writer: asyncio.Task[None] | None = None
        self._checks: set[asyncio.Task[Checked[list[ClaimSupport]]]] = set()
        self._held_count = 0  # text entries queued
        self.original: list[str] = []  # the answer as the model wrote it
        self.delivered: list[str] = []  # the answer text written to the app
        self.blocked = False
        self.retried: str | None = None  # retry: passed | failed | error | timeout
        self.trigger: str | None = None
        self.checked = 0
        self.late = 0
        self.failures: Counter[str] = Counter()
        self.last_wait_s = 0.0

    # ------------------------------------------------------------------------------------------- the relay's side
    def text(self, text: str) -> None:
        """Answer text, in order.  Complete sentences start their checks at once."""
        if text:
            self.original.append(text)
            self._hold(self._cutter.feed(text))

    def end_text(self) -> None:
        """The answer is complete: what is left becomes the last sentence(s)."""
        if not self._text_ended:
            self._text_ended = True
            self._hold(self._cutter.finish())

    def event(self, build: Callable[[], bytes | None]) -> None:
        """Any other event, written after the text before it; `build` runs when its turn comes.  (The answer's last
        sentence is complete only at `end_text`: call it before passing the events that close the answer.)"""
        self._entries.append(_Event(build))
        self._start()

    async def drain(self) -> None:
        """Everything queued is decided and written (each sentence's wait is bounded by the deadline)."""
        self.end_text()
        self._closed = True
        self._start()
        assert self._writer is not None
        await self._writer

    def abandon(self) -> None:
        """The app went away: stop writing and checking."""
        for task in (self._writer, *self._checks):
            if task is not None:
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
        if self._writer is not None and self._writer.cancelled():
            return INCOMPLETE
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
            if segment.claim is None:
                self._entries.append(_Held(segment, None, 0, now))
            else:
                self._entries.append(_Held(segment, task, index, now))
                index += 1
        self._held_count += len(segments)
        self._start()

    def _start_check(self, claims: list[Claim]) -> asyncio.Task[Checked[list[ClaimSupport]]]:
        task = asyncio.ensure_future(self._check(claims))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)
        return task

    def _start(self) -> None:
        if self._writer is None:
            self._writer = asyncio.ensure_future(self._run())
        self._wake.set()

    # ------------------------------------------------------------------------------------------- writing
    async def _run(self) -> None:
        while True:
            if self.hold_all and not self._text_ended and self._next_is_text():
                await self._sleep()  # retry: the answer is judged whole
                continue
            if not self._entries:
                if self._closed:
                    await self._nothing_left()
                    return
                await self._sleep()
                continue
            if self.hold_all and self._next_is_text():
                await self._release_checked_whole()
                continue
            entry = self._entries.popleft()
            if isinstance(entry, _Event):
                await self._nothing_left()
                data = entry.build()
                if data:
                    await self._write(data)
            else:
                self._held_count -= 1
                await self._release(entry)

    async def _nothing_left(self) -> None:
        """`strip` removed every sentence of a finished answer: the app gets the block message, not nothing."""
        if self._text_ended and not self._held_count and self._splicer.removed and not self.delivered and not self.blocked:
            await self._emit_block()

    def _next_is_text(self) -> bool:
        return bool(self._entries) and isinstance(self._entries[0], _Held)

    async def _sleep(self) -> None:
        self._wake.clear()
        await self._wake.wait()

    async def _support(self, held: _Held) -> ClaimSupport | None:
        """The claim's check, waited for until its deadline; None when it failed or came too late (counted)."""
        assert held.check is not None
        left = self._deadline_s - (time.perf_counter() - held.submitted)
        if not held.check.done() and left > 0:
            await asyncio.wait({held.check}, timeout=left)
        self.last_wait_s = max(0.0, time.perf_counter() - held.submitted)
        result = held.check.result() if held.check.done() and not held.check.cancelled() else None
        if result is None or result.failure is not None or result.value is None or held.index >= len(result.value):
            failure = "timeout" if result is None else (result.failure or "scorer_error")
            self.failures[failure if failure in FAILED_OPEN else "scorer_error"] += 1
            self.late += failure == "timeout"
            return None
        self.checked += 1
        return result.value[held.index]

    async def _release(self, held: _Held) -> None:
        if self.blocked:
            return  # after the block message, the rest of the answer is not the app's
        support = await self._support(held) if held.check is not None else None
        if support is not None and claim_trips(support, self.settings.verdicts):
            self.trigger = self.trigger or support.outcome.value
            if self.action == "block":
                await self._emit_block()
                return
            self._splicer.drop(held.segment)
            return
        await self._emit(self._splicer.keep(held.segment))

    async def _emit(self, text: str) -> None:
        if text:
            self.delivered.append(text)
            await self._write(self._encode(text))

    async def _emit_block(self) -> None:
        self.blocked = True
        separator = "\n\n" if self.delivered else ""
        await self._emit(separator + self.settings.block_message)

    # ------------------------------------------------------------------------------------------- retry
    async def _release_checked_whole(self) -> None:
        """`retry`: the whole first answer is held and checked; it goes out if nothing trips, else the second."""
        held = self._take_held()
        supports = [await self._support(h) if h.check is not None else None for h in held]
        if not any(s is not None and claim_trips(s, self.settings.verdicts) for s in supports):
            for h in held:
                await self._emit(self._splicer.keep(h.segment))
            return
        self.trigger = next(s.outcome.value for s in supports if s is not None and claim_trips(s, self.settings.verdicts))
        second = await self._retry() if self._retry is not None else None
        if second is None:
            self.retried = "error"
            await self._fall_back(held, supports)
            return
        cutter = SegmentCutter()
        segments = cutter.feed(second) + cutter.finish()
        claims = [s.claim for s in segments if s.claim is not None]
        task = self._start_check(claims) if claims else None
        now = time.perf_counter()
        again, index = [], 0
        for segment in segments:
            again.append(_Held(segment, task if segment.claim is not None else None, index, now))
            index += segment.claim is not None
        again_supports = [await self._support(h) if h.check is not None else None for h in again]
        if any(s is not None and claim_trips(s, self.settings.verdicts) for s in again_supports):
            self.retried = "failed"
            await self._fall_back(again, again_supports)
            return
        self.retried = "passed"
        await self._emit(second)

    def _take_held(self) -> list[_Held]:
        """Every held sentence (events between them follow the answer: it goes out in one piece)."""
        held = [e for e in self._entries if isinstance(e, _Held)]
        events = [e for e in self._entries if isinstance(e, _Event)]
        self._entries = deque(events)
        self._held_count = 0
        return held

    async def _fall_back(self, held: list[_Held], supports: list[ClaimSupport | None]) -> None:
        if self.settings.retry_fallback == "block":
            await self._emit_block()
            return
        trips = [s is not None and claim_trips(s, self.settings.verdicts) for s in supports]
        if all(trips[i] for i, h in enumerate(held) if h.segment.claim is not None):
            await self._emit_block()  # nothing would be left
            return
        for h, tripped in zip(held, trips):
            if tripped:
                self._splicer.drop(h.segment)
            else:
                await self._emit(self._splicer.keep(h.segment))
