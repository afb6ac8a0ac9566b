"""The guard's parts on their own: the override, the trigger, the text surgery of strip, the whole-reply policy and
the stream's sentence hold-back (with scripted checks), and the guard's lane over the real embedder."""

from __future__ import annotations

import asyncio
import threading

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from ragtap.guard.checks import Checked
from ragtap.guard.decision import BLOCKED, PASSED, RETRIED, STRIPPED, TIMEOUT, UNLOCATED, claim_trips, deliver, trigger_of
from ragtap.guard.reply import SecondAnswer, guard_reply
from ragtap.guard.segments import SegmentCutter, splice
from ragtap.guard.settings import GuardSettings, requested_guard
from ragtap.guard.strip import strip_claims
from ragtap.guard.stream import GuardGate
from ragtap.scoring.claims import Claim, split_claims
from ragtap.types import Assessment, ClaimOutcome, ClaimSupport, Scores, Verdict

INVENTED = "invented"  # the scripted checks call a claim with this word unsupported, "contrary" contradicted


def support(claim: Claim, outcome: ClaimOutcome) -> ClaimSupport:
    return ClaimSupport("answer", claim.text, claim.start, claim.end, outcome, "scripted", 0.5, 0, 0, 10, 0.5, (), ())


def scripted_outcome(text: str) -> ClaimOutcome:
    if "contrary" in text:
        return ClaimOutcome.CONTRADICTED
    return ClaimOutcome.NOT_FOUND if INVENTED in text else ClaimOutcome.SUPPORTED


def assessed(answer: str, verdict: Verdict | None = None) -> Assessment:
    claims = tuple(support(c, scripted_outcome(c.text)) for c in split_claims(answer))
    if verdict is None:
        verdict = Verdict.UNSUPPORTED_ANSWER if any(c.supported is False for c in claims) else Verdict.GROUNDED
    return Assessment(Scores(), {}, verdict, False, "scripted", None, claims)


def strip(text: str, *numbers: int) -> str:
    claims = split_claims(text)
    targets = [support(claims[i], ClaimOutcome.NOT_FOUND) for i in numbers]
    result = strip_claims(text, targets)
    return "" if result.empty else result.text


# ------------------------------------------------------------------------------------------------ strip
@pytest.mark.parametrize(
    ("text", "removed", "expected"),
    [
        ("The nut is 120 Nm. It is made of steel. Tighten it twice.", [1], "The nut is 120 Nm. Tighten it twice."),
        ("The nut is 120 Nm. It is made of steel. Tighten it twice.", [0], "It is made of steel. Tighten it twice."),
        ("The nut is 120 Nm. It is made of steel. Tighten it twice.", [2], "The nut is 120 Nm. It is made of steel."),
        ("Steps to follow:\n1. Loosen the nuts.\n2. Lift the car.\n3. Remove the wheel.\n\nDrive safely after.", [2],
         "Steps to follow:\n1. Loosen the nuts.\n2. Remove the wheel.\n\nDrive safely after."),
        ("Steps to follow:\n1) Loosen the nuts.\n2) Lift the car.\n3) Remove the wheel.\n4) Refit it.", [1, 2],
         "Steps to follow:\n1) Remove the wheel.\n2) Refit it."),
        ("- Use jack stands. Never crawl under.\n- Other item here.", [1], "- Use jack stands.\n- Other item here."),
        ("- Use jack stands. Never crawl under.\n- Other item here.", [0], "- Never crawl under.\n- Other item here."),
        ("- Use jack stands. Never crawl under.\n- Other item here.", [0, 1], "- Other item here."),
        ("First paragraph here.\n\nSecond one is here. More of it here.\n\nThird one here.\n", [1, 2],
         "First paragraph here.\n\nThird one here.\n"),
        ("First paragraph here.\n\nSecond one is here.\n\nThird one here.\n", [0], "Second one is here.\n\nThird one here.\n"),
        ("First paragraph here.\n\nSecond one is here.\n\nThird one here.", [2], "First paragraph here.\n\nSecond one is here."),
        # a numbered list nested under a bullet: only the inner list is renumbered
        ("- Wheels need care:\n  1. Check the nuts.\n  2. Check the tyre.\n  3. Check the rim.\n- Brakes need care too.", [2],
         "- Wheels need care:\n  1. Check the nuts.\n  2. Check the rim.\n- Brakes need care too."),
        # a list that does not start at 1 keeps its start
        ("Then:\n4. Lower the car.\n5. Remove the jack.\n6. Tighten again.", [2], "Then:\n4. Lower the car.\n5. Tighten again."),
        # a new list after a paragraph is not shifted by removals from the first list
        ("1. Alpha step here.\n2. Beta step here.\n\nNext part follows.\n1. Gamma step here.\n2. Delta step here.", [1],
         "1. Alpha step here.\n\nNext part follows.\n1. Gamma step here.\n2. Delta step here."),
    ],
)
def test_strip_removes_whole_claims_and_keeps_the_rest_tidy(text: str, removed: list[int], expected: str) -> None:
    assert strip(text, *removed) == expected


def test_strip_of_every_claim_is_empty_and_claims_from_another_text_are_left_alone() -> None:
    assert strip("Only this sentence is here. And this one too.", 0, 1) == ""
    text = "The nut is 120 Nm. Tighten it twice."
    stale = ClaimSupport("answer", "Something else", 0, 14, ClaimOutcome.NOT_FOUND, "x", None, None, None, None, 0.0, (), ())
    assert strip_claims(text, [stale]).removed == 0
    noted = strip_claims(text, [support(split_claims(text)[1], ClaimOutcome.NOT_FOUND)], note="(One statement was removed.)")
    assert noted.text == "The nut is 120 Nm.\n\n(One statement was removed.)"


texts = st.lists(
    st.sampled_from(["The nut is 120 Nm.", "Lift it.", "1. Loosen it now.", "- A bullet item here.", "\n", "\n\n", " ",
                     "e.g. this one", "Dr. Who came.", "Wait!", "ok", "  2) Indented step here."]),
    min_size=1, max_size=12,
).map("".join)


@hsettings(max_examples=150, deadline=None)
@given(text=texts, cuts=st.lists(st.integers(min_value=1, max_value=200), max_size=8))
def test_segments_cut_in_any_pieces_are_the_whole_texts_segments_and_join_back(text: str, cuts: list[int]) -> None:
    whole = SegmentCutter(max_claim_chars=10_000)
    expected = whole.feed(text) + whole.finish()
    assert "".join(s.text for s in expected) == text
    assert [(c.start, c.end) for c in split_claims(text)] == [(s.claim.start, s.claim.end) for s in expected if s.claim is not None]
    cutter = SegmentCutter(max_claim_chars=10_000)
    got, last = [], 0
    for cut in sorted({c for c in cuts if c < len(text)}):
        got += cutter.feed(text[last:cut])
        last = cut
    got += cutter.feed(text[last:]) + cutter.finish()
    assert [(s.text, s.start, s.claim) for s in got] == [(s.text, s.start, s.claim) for s in expected]
    assert splice(got, set())[0] == text


def test_a_line_with_no_sentence_end_is_cut_at_the_bound() -> None:
    cutter = SegmentCutter(max_claim_chars=50)
    out = cutter.feed("word " * 30)
    assert len(out) == 1 and out[0].claim is not None and len(out[0].text) == 150


# ------------------------------------------------------------------------------------------------ the policy
def test_triggers_name_verdicts_and_contradicted_claims() -> None:
    answer = "The nut is 120 Nm. The nut is contrary to that. It is invented here."
    unsupported = assessed(answer)
    found = trigger_of(unsupported, ("unsupported_answer",))
    assert found is not None and found.name == "unsupported_answer" and len(found.claims) == 2
    only = trigger_of(unsupported, ("contradicted",))
    assert only is not None and [c.text for c in only.claims] == ["The nut is contrary to that."]
    assert trigger_of(unsupported, ("parametric",)) is None
    claims = {c.text: c for c in unsupported.claims}
    assert claim_trips(claims["It is invented here."], ("parametric",))
    assert not claim_trips(claims["It is invented here."], ("contradicted",))
    assert claim_trips(claims["The nut is contrary to that."], ("contradicted",))
    assert not claim_trips(claims["The nut is 120 Nm."], ("unsupported_answer", "contradicted"))


def test_requested_guard_field_then_header_then_config() -> None:
    config = GuardSettings(action="annotate")
    assert requested_guard(config, None, None).action == "annotate"
    assert requested_guard(config, None, "Strip").action == "strip"
    assert requested_guard(config, {"guard": "block"}, "strip").action == "block"
    wanted = requested_guard(config, {"guard": {"action": "annotate", "annotate_body": True}}, None)
    assert (wanted.action, wanted.annotate_body) == ("annotate", True)
    bad = requested_guard(config, {"guard": "shred"}, None)
    assert (bad.action, bad.problem) == ("annotate", "unknown_action")
    assert requested_guard(config, {"guard": 3}, "off").action == "off"


@pytest.mark.parametrize(("action", "text", "outcome"), [
    ("annotate", "The nut is 120 Nm. It is invented here.", "annotated"),
    ("strip", "The nut is 120 Nm. It is invented here.", STRIPPED),
    ("block", "The nut is 120 Nm. It is invented here.", BLOCKED),
    ("strip", "The nut is 120 Nm.", PASSED),
])
def test_deliver(action: str, text: str, outcome: str) -> None:
    settings = GuardSettings(block_message="Blocked.")
    delivery = deliver(action, text, assessed(text), settings)
    assert delivery.outcome == outcome
    assert delivery.text == {"annotated": text, STRIPPED: "The nut is 120 Nm.", BLOCKED: "Blocked.", PASSED: text}[outcome]


def test_a_verdict_with_no_sentence_to_name_strips_nothing() -> None:
    text = "The nut is 120 Nm."
    delivery = deliver("strip", text, assessed(text, Verdict.PARAMETRIC), GuardSettings())
    assert (delivery.outcome, delivery.text) == (UNLOCATED, text)


async def _assess(answer: str) -> Checked[Assessment]:
    return Checked(assessed(answer))


@pytest.mark.parametrize(("second", "fallback", "expected", "outcome", "retry"), [
    ("The nut is 120 Nm.", "strip", "The nut is 120 Nm.", RETRIED, "passed"),
    ("The nut is 120 Nm. Also invented again.", "strip", "The nut is 120 Nm.", STRIPPED, "failed"),
    ("The nut is 120 Nm. Also invented again.", "block", "Blocked.", BLOCKED, "failed"),
    (None, "strip", "The nut is 120 Nm. Steel.", STRIPPED, "error"),
])
async def test_retry(second: str | None, fallback: str, expected: str, outcome: str, retry: str) -> None:
    first = "The nut is 120 Nm. It is invented here. Steel."
    settings = GuardSettings(block_message="Blocked.", retry_fallback=fallback)
    asked = []

    async def again() -> SecondAnswer | None:
        asked.append(1)
        return None if second is None else SecondAnswer(second, lambda: _assess(second))

    result = await guard_reply("retry", first, _assess, settings, again)
    assert (result.text, result.record.outcome, result.record.retry, len(asked)) == (expected, outcome, retry, 1)
    assert result.second == (second is not None)
    assert result.record.original_answer == first


async def test_a_failed_or_late_check_releases_the_answer_unchanged() -> None:
    text = "The nut is 120 Nm. It is invented here."

    async def late(answer: str) -> Checked[Assessment]:
        return Checked(None, TIMEOUT, 0.3)

    async def unscored(answer: str) -> Checked[Assessment]:
        return Checked(assessed(answer, Verdict.UNSCORED))

    for action in ("annotate", "strip", "block", "retry"):
        result = await guard_reply(action, text, late, GuardSettings(), None)
        assert (result.text, result.record.outcome, result.record.delivered_answer) == (text, TIMEOUT, None)
        result = await guard_reply(action, text, unscored, GuardSettings(), None)
        assert (result.text, result.record.outcome) == (text, "unscorable")


# ------------------------------------------------------------------------------------------------ streams
def scripted_check(fail: bool = False):  # type: ignore[no-untyped-def]
    async def check(claims: list[Claim]) -> Checked[list[ClaimSupport]]:
        if fail:
            return Checked(None, "scorer_error")
        return Checked([support(c, scripted_outcome(c.text)) for c in claims])

    return check


async def run_gate(action: str, pieces: list[str], check, settings: GuardSettings | None = None, retry=None,  # type: ignore[no-untyped-def]
                   push: bool = False) -> tuple[GuardGate, str]:
    gate = GuardGate(action, settings or GuardSettings(block_message="Blocked."), check, retry=retry)
    out: list[str] = []
    if push:
        gate.on_ready = out.append
    for piece in pieces:
        out.append(gate.feed(piece))
        await asyncio.sleep(0)
    out.append(await asyncio.wait_for(gate.release(), 5))
    return gate, "".join(out)


def pieces_of(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


ANSWER = "Steps to follow:\n1. Loosen the nuts.\n2. It is invented here.\n3. Remove the wheel."


@pytest.mark.parametrize("push", [False, True], ids=["pull", "push"])
async def test_stream_strip_drops_the_unsupported_sentence_and_renumbers(push: bool) -> None:
    gate, text = await run_gate("strip", pieces_of(ANSWER), scripted_check(), push=push)
    assert text == "Steps to follow:\n1. Loosen the nuts.\n2. Remove the wheel."
    record = gate.record()
    assert (record.outcome, record.removed_claims, record.original_answer) == (STRIPPED, 1, ANSWER)
    assert record.delivered_answer == text and record.sentences_checked == 4


async def test_stream_block_ends_the_text_with_the_block_message() -> None:
    gate, text = await run_gate("block", pieces_of(ANSWER), scripted_check())
    assert text == "Steps to follow:\n1. Loosen the nuts.\n\nBlocked."
    assert gate.record().outcome == BLOCKED and gate.record().original_answer == ANSWER


async def test_stream_of_a_faithful_answer_is_byte_for_byte() -> None:
    text = "First it is 120 Nm.\n\n- Loosen the nuts.\n- Remove the wheel.\n"
    for action in ("strip", "block", "retry"):
        gate, got = await run_gate(action, pieces_of(text, 3), scripted_check())
        assert got == text and gate.record().outcome == PASSED and gate.record().delivered_answer is None


async def never_checked(claims: list[Claim]) -> Checked[list[ClaimSupport]]:
    await asyncio.Event().wait()  # a check that never ends: only the deadline lets the text out (run_gate waits 5 s)
    raise AssertionError("unreachable")


async def test_stream_sentences_late_or_failed_are_released_unchanged_and_counted() -> None:
    settings = GuardSettings(deadline_ms=30.0, block_message="Blocked.")
    gate, text = await run_gate("block", pieces_of(ANSWER), never_checked, settings)
    assert text == ANSWER and gate.record().outcome == TIMEOUT and gate.record().sentences_late == 4
    gate, text = await run_gate("strip", pieces_of(ANSWER), scripted_check(fail=True), settings)
    assert text == ANSWER and gate.record().outcome == "scorer_error"


async def wait_for_text(sent: list[str], expected: str) -> None:
    for _ in range(500):  # bounded: a check and a push take a few loop turns
        if "".join(sent) == expected:
            return
        await asyncio.sleep(0.001)
    raise AssertionError(f"{''.join(sent)!r} != {expected!r}")


async def test_a_sentence_goes_out_once_checked_with_the_next_feed_or_at_once_when_pushed() -> None:
    gate = GuardGate("strip", GuardSettings(), scripted_check())
    assert gate.feed("The nut is 120 Nm. Tighten") == ""  # being checked
    await asyncio.sleep(0.01)
    assert gate.feed(" it") == "The nut is 120 Nm."  # checked meanwhile: out with the next piece
    assert await gate.release() == " Tighten it"

    pushed: list[str] = []
    gate = GuardGate("strip", GuardSettings(), scripted_check())
    gate.on_ready = pushed.append
    assert gate.feed("The nut is 120 Nm. Tighten") == ""
    await wait_for_text(pushed, "The nut is 120 Nm.")  # no further text needed
    assert gate.feed(" it twice.") == ""
    gate.answer_complete()  # the answer string closed: its last sentence is checked and pushed before the end
    await wait_for_text(pushed, "The nut is 120 Nm. Tighten it twice.")
    assert await gate.release() == ""


async def test_a_pushed_sentence_is_released_at_its_deadline_without_further_text() -> None:
    pushed: list[str] = []
    gate = GuardGate("block", GuardSettings(deadline_ms=20.0), never_checked)
    gate.on_ready = pushed.append
    gate.feed("The nut is 120 Nm. Tighten")
    await wait_for_text(pushed, "The nut is 120 Nm.")
    assert gate.late == 1
    gate.abandon()


async def test_stream_strip_of_every_sentence_delivers_the_block_message() -> None:
    gate, text = await run_gate("strip", pieces_of("It is invented here. Also invented there."), scripted_check())
    assert text == "Blocked."


@pytest.mark.parametrize(("second", "expected", "retry"), [
    ("Steps to follow:\n1. Loosen the nuts.", "Steps to follow:\n1. Loosen the nuts.", "passed"),
    ("Loosen the nuts. It is invented once more.", "Loosen the nuts.", "failed"),
    (None, "Steps to follow:\n1. Loosen the nuts.\n2. Remove the wheel.", "error"),
])
async def test_stream_retry_holds_the_whole_answer_and_sends_the_second_if_it_passes(second: str | None, expected: str, retry: str) -> None:
    asked = []

    async def again() -> str | None:
        asked.append(1)
        return second

    gate = GuardGate("retry", GuardSettings(block_message="Blocked."), scripted_check(), retry=again)
    assert "".join(gate.feed(p) for p in pieces_of(ANSWER)) == ""  # nothing before the whole answer is judged
    text = await asyncio.wait_for(gate.release(), 5)
    assert (text, gate.record().retry, len(asked)) == (expected, retry, 1)
    assert gate.record().outcome == {"passed": RETRIED, "failed": STRIPPED, "error": STRIPPED}[retry]


# ------------------------------------------------------------------------------------------------ the lane
DOCUMENTS = ("The wheel nuts of the car are tightened to 120 Nm with a torque wrench, in a star pattern.",)


async def test_lane_checks_sentences_against_the_documents(embedder) -> None:  # type: ignore[no-untyped-def]
    from ragtap.config import Config
    from ragtap.pipeline.guard_lane import GuardLane
    from ragtap.types import Document
    from ragtap.wiring import build_policy

    lane = GuardLane(embedder, build_policy(Config()))
    try:
        evidence = lane.evidence([Document(DOCUMENTS[0])], "How are the wheel nuts tightened?")
        claims = split_claims("Tighten the wheel nuts to 120 Nm in a star pattern. The car was designed by Alice Zhang in Paris.")
        checked = await lane.check(evidence, claims, 5.0)
        assert checked.failure is None and checked.value is not None
        assert [c.outcome for c in checked.value] == [ClaimOutcome.SUPPORTED, ClaimOutcome.NOT_FOUND]
    finally:
        lane.close()


class GatedEmbedder:
    """The real embedder behind a gate the test opens (at most 60 s, longer than any client waits): a scorer slower
    than any deadline, with no sleep (the lane's thread waits on the event)."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.gate = threading.Event()

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.gate.wait(60)
        return self.inner.embed(texts)


async def test_lane_timeout_and_overload_are_outcomes(embedder) -> None:  # type: ignore[no-untyped-def]
    from ragtap.config import Config
    from ragtap.pipeline.guard_lane import GuardLane
    from ragtap.types import Document, Interaction
    from ragtap.wiring import build_policy

    gated = GatedEmbedder(embedder)
    lane = GuardLane(gated, build_policy(Config()), max_in_flight=1)
    try:
        from conftest import ANSWER as GROUNDED_ANSWER, DOCUMENTS as GROUNDED_DOCUMENTS, QUESTION, SUPPORTING

        interaction = Interaction(QUESTION, (Document(GROUNDED_DOCUMENTS[0]),), GROUNDED_ANSWER, SUPPORTING)
        late = await lane.assess(interaction, 0.05)
        assert late.failure == TIMEOUT and late.value is None
        busy = await lane.assess(interaction, 1.0)  # the first is still running in the lane's one slot
        assert busy.failure == "overload"
        gated.gate.set()
        for _ in range(200):  # bounded wait for the first job to finish and free its slot
            if lane._in_flight == 0:
                break
            await asyncio.sleep(0.01)
        done = await lane.assess(interaction, 5.0)
        assert done.failure is None and done.value is not None and done.value.verdict is Verdict.GROUNDED
    finally:
        gated.gate.set()
        lane.close()
