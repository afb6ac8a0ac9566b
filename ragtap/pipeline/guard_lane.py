"""The guard's checks, on the response path: a whole reply assessed, or streamed sentences judged, within a deadline.

The background scoring queue (`queue.py`) sheds load and runs at the lowest priority, which is right for work
nobody waits for and wrong for an answer held back from the app.  So the guard has its own lane: one thread at
normal priority, the same embedder (its cache is shared and thread-safe) and the same scoring core
(`assess_batch` for a whole reply; `judge_claim` against the documents' passages for a sentence).  Nothing here
blocks the event loop: the work runs in the lane's thread and is awaited with a timeout.

Every failure is an outcome, never an exception: `timeout` (the deadline passed; the work, once started, runs to
its end and is discarded), `overload` (more than `max_in_flight` jobs queued: not started), `scorer_error`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ragtap.guard.decision import OVERLOAD, SCORER_ERROR, TIMEOUT
from ragtap.guard.checks import Checked
from ragtap.pipeline.batch import ScoringPolicy, assess_batch, without_refusals
from ragtap.pipeline.limits import bound
from ragtap.scoring.claims import Claim, Evidence, judge_claim
from ragtap.scoring.passages import split_passages
from ragtap.types import Assessment, ClaimSupport, Document, Interaction

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder

log = logging.getLogger("ragtap.guard")
T = TypeVar("T")


class DocumentEvidence:
    """One request's documents as evidence for its sentences: passages embedded once, in the lane's thread, as
    soon as the request is known (while the upstream writes), awaited by the first sentence's check."""

    def __init__(self, future: concurrent.futures.Future[Evidence] | None) -> None:
        self.future = future  # None: the lane was overloaded when the request came


class GuardLane:
    def __init__(self, embedder: Embedder, policy: ScoringPolicy, *, max_in_flight: int = 64) -> None:
        self.embedder = embedder
        self.policy = policy
        self.max_in_flight = max(1, max_in_flight)
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragtap-guard")
        self._in_flight = 0  # jobs queued or running in the lane's thread (event-loop side count)
        self.failures = 0

    # ---------------------------------------------------------------------------------------------- whole replies
    async def assess(self, interaction: Interaction, timeout_s: float) -> Checked[Assessment]:
        """The whole reply's assessment, as background scoring would give it (same core, same policy)."""
        item = bound(interaction, self.policy.limits)
        return await self._run(lambda: assess_batch([item], self.embedder, self.policy)[0], timeout_s)

    # ---------------------------------------------------------------------------------------------- streams
    def evidence(self, documents: Sequence[Document], question: str) -> DocumentEvidence:
        """Start embedding the documents' passages now; `check` waits for them."""
        limits = self.policy.limits
        texts = [d.text[: limits.max_document_chars] for d in documents[: limits.max_documents]]

        def build() -> Evidence:
            passages = [p for i, text in enumerate(texts) for p in split_passages(text, i, self.policy.passage_words)]
            passages = passages[: limits.max_passages]
            vectors = self.embedder.embed([p.text for p in passages]) if passages else np.zeros((0, 1), dtype=np.float32)
            used = texts[: passages[-1].document + 1 if passages else 0]
            return Evidence.of(passages, vectors, used, question[: limits.max_text_chars])

        return DocumentEvidence(self._submit(build))

    async def check(self, evidence: DocumentEvidence, claims: Sequence[Claim], timeout_s: float) -> Checked[list[ClaimSupport]]:
        """Each claim judged against the documents alone (a streamed answer comes before its supporting content),
        by the scoring core's rule; a sentence that declines or only frames the answer is not judged, as in scoring."""
        if evidence.future is None:
            return Checked(None, OVERLOAD)
        started = time.perf_counter()
        try:
            documents = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(evidence.future)), timeout_s)
        except TimeoutError:
            return Checked(None, TIMEOUT, time.perf_counter() - started)
        except Exception as error:  # noqa: BLE001 - the embedder failed on the documents
            return self._failed(error, started)
        if not documents.passages:
            return Checked([], None, time.perf_counter() - started)
        policy = self.policy
        claims = without_refusals(list(claims), policy.refusal)

        def judge() -> list[ClaimSupport]:
            judged = [c for c in claims if c.not_judged is None]
            vectors = self.embedder.embed([c.checked_text for c in judged]) if judged else np.zeros((0, 1), dtype=np.float32)
            rows = {id(c): i for i, c in enumerate(judged)}
            return [judge_claim(c, vectors[rows[id(c)]] if id(c) in rows else None, documents, policy.claims) for c in claims]

        left = max(0.0, timeout_s - (time.perf_counter() - started))
        result = await self._run(judge, left)
        return Checked(result.value, result.failure, time.perf_counter() - started)

    # ---------------------------------------------------------------------------------------------- the thread
    def _submit(self, work: Callable[[], T]) -> concurrent.futures.Future[T] | None:
        if self._in_flight >= self.max_in_flight:
            return None
        self._in_flight += 1
        future = self._executor.submit(work)
        loop = asyncio.get_running_loop()

        def done(_: concurrent.futures.Future[T]) -> None:
            try:
                loop.call_soon_threadsafe(self._done)
            except RuntimeError:  # the loop closed meanwhile (shutdown): nobody counts any more
                pass

        future.add_done_callback(done)
        return future

    def _done(self) -> None:
        self._in_flight -= 1

    async def _run(self, work: Callable[[], T], timeout_s: float) -> Checked[T]:
        started = time.perf_counter()
        future = self._submit(work)
        if future is None:
            return Checked(None, OVERLOAD)
        try:
            value = await asyncio.wait_for(asyncio.wrap_future(future), timeout_s)
        except TimeoutError:
            return Checked(None, TIMEOUT, time.perf_counter() - started)
        except Exception as error:  # noqa: BLE001 - the embedder or the scoring core failed: fail open
            return self._failed(error, started)
        return Checked(value, None, time.perf_counter() - started)

    def _failed(self, error: BaseException, started: float) -> Checked[T]:
        self.failures += 1
        log.warning("guard check failed (%s): the answer is released unchanged", type(error).__name__)
        return Checked(None, SCORER_ERROR, time.perf_counter() - started)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
