"""Offline scoring spread over processes: `ragtap score --jobs N` and the experiments' `--jobs N`.

The interactions are cut into batches exactly as with one job (the batch size does not depend on the number of
jobs); each batch is scored whole by one process, with the configured embedder built in that process, and the
results come back in the batches' order.  So the output is the one job's, line for line, as long as a text gets
the same vector whichever batch and process embeds it: true of the default int8 MiniLM (one text per model run,
`ragtap/embedding/minilm_int8.py`); the fp32 model pads texts to the longest of a batch of 8, which can move a
score in its last bits.

Why processes and not threads: the scoring code around the model (passages, claims, lexical overlap, verdicts)
is Python and holds the GIL, about a tenth of an interaction's CPU with the int8 model; processes also give
every job its own onnxruntime session without any sharing.  Each job's embedder gets `cores // jobs` threads.

Processes are forked where the platform can (Linux): a child then starts in milliseconds and inherits the
registered embedders and plugins; elsewhere they are spawned and `prepare` (the plugins' loader) runs first.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TYPE_CHECKING

from ragtap.config import Config, usable_cores
from ragtap.pipeline.batch import ScoringPolicy, assess_batch
from ragtap.types import Assessment, Interaction

if TYPE_CHECKING:
    from ragtap.embedding.base import Embedder

# Interactions per batch.  A batch is the unit a job takes, so there must be several per job: 600 interactions
# in batches of 128 are 5 batches, and 2 jobs then spend the last fifth of the run with one of them idle.  Within a
# batch, texts are embedded once; across batches the embedder's cache does the same.
DEFAULT_BATCH = 32
IN_FLIGHT_PER_JOB = 2  # batches handed to each process ahead of the one it works on: bounded memory, no idle gaps


def default_jobs() -> int:
    """`--jobs` when not given: one per core this process may run on."""
    return usable_cores()


def threads_per_job(jobs: int) -> int:
    """The embedder threads of each job: the cores shared out, at least one."""
    return max(1, default_jobs() // max(1, jobs))


def batches_of(items: Sequence[Interaction], size: int) -> list[Sequence[Interaction]]:
    return [items[start : start + size] for start in range(0, len(items), max(1, size))]


def assess_batches(
    batches: Sequence[Sequence[Interaction]],
    policy: ScoringPolicy,
    config: Config | None,
    *,
    jobs: int,
    embedder: Callable[[], Embedder],
    prepare: Callable[[], None] | None = None,
) -> Iterator[list[Assessment]]:
    """Each batch's assessments, in the batches' order.

    With one job (or one batch, or no `config`) the batches are scored here, with the embedder that `embedder()`
    returns (called only then).  With more, `jobs` processes score them, each with the embedder `config` names,
    built in the process.  The processes start before this returns: before the caller starts threads of its own (a progress
    bar's monitor) that a forked child would inherit in an unknown state."""
    jobs = max(1, min(jobs, len(batches))) if config is not None else 1
    if config is None or jobs == 1:
        model = embedder()
        return (assess_batch(batch, model, policy) for batch in batches)
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=_start_job, initargs=(config, policy, threads_per_job(jobs), prepare))
    upcoming = iter(batches)
    pending: deque[Future[list[Assessment]]] = deque()
    for batch in upcoming:
        pending.append(pool.submit(_assess, list(batch)))
        if len(pending) >= jobs * IN_FLIGHT_PER_JOB:
            break
    return _in_order(pool, pending, upcoming)


def _in_order(pool: ProcessPoolExecutor, pending: deque[Future[list[Assessment]]], upcoming: Iterator[Sequence[Interaction]]) -> Iterator[list[Assessment]]:
    try:
        while pending:
            result = pending.popleft().result()
            batch = next(upcoming, None)
            if batch is not None:
                pending.append(pool.submit(_assess, list(batch)))
            yield result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


# ------------------------------------------------------------------------------------------ inside a job process
_job: tuple[Embedder, ScoringPolicy] | None = None


def _start_job(config: Config, policy: ScoringPolicy, threads: int, prepare: Callable[[], None] | None) -> None:
    global _job
    # Ctrl-C reaches the whole process group: the parent stops the pool, the jobs do not print tracebacks.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if prepare is not None:
        prepare()
    from ragtap.wiring import build_embedder

    _job = (build_embedder(config, threads=threads), policy)


def _assess(batch: list[Interaction]) -> list[Assessment]:
    assert _job is not None, "the job's initializer did not run"
    embedder, policy = _job
    return assess_batch(batch, embedder, policy)
