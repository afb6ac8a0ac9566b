"""QRD on long documents (issue 21): besides the passages, the question is compared with short windows of words
inside the passage closest to it, so a question about one detail of a long paragraph is not flagged as poor
retrieval because the paragraph also says other things."""

from __future__ import annotations

import dataclasses

import numpy as np
from conftest import RecordingEmbedder

from ragtap.config import DEFAULT_THRESHOLDS
from ragtap.pipeline.batch import ScoringPolicy, assess_batch
from ragtap.scoring.metrics import compute_scores
from ragtap.scoring.passages import Passage, question_windows
from ragtap.types import Document, Interaction

# Written for this test (a made-up reservoir): 137 words, each question about one detail of it.
RESERVOIR = (
    "The Harwick reservoir was built between 1931 and 1936 to supply the growing mill towns of the upper valley. "
    "Its earth dam, faced with local sandstone, rises 38 metres above the old riverbed and holds back about "
    "fourteen million cubic metres of water. During construction a village of some forty houses, a chapel and "
    "a coaching inn were cleared, and the chapel bell now hangs in the parish church of Lower Harwick. "
    "Water leaves the reservoir through a valve tower on the eastern shore and runs by gravity along a "
    "twenty-two kilometre aqueduct to the treatment works at Milnford. Since 1998 the surrounding moorland has "
    "been managed to reduce peat erosion, which had been colouring the water brown after heavy rain. "
    "The reservoir is also used for sailing, and a footpath of eleven kilometres follows its shoreline."
)
BRASS_BAND = (
    "The Milnford brass band was founded in 1889 by workers at the cotton mill and has played at every town "
    "carnival since. It won the regional championship four times between the wars and still rehearses each "
    "Thursday in the old co-operative hall, where its collection of early instruments is on display."
)
DETAIL_QUESTIONS = (
    "Where does the chapel bell from the flooded village hang today?",
    "How long is the aqueduct that carries the water to the treatment works?",
    "What was making the water brown after heavy rain?",
)


def _assess(embedder, questions, document: str, policy: ScoringPolicy):  # type: ignore[no-untyped-def]
    return assess_batch([Interaction(q, (Document(document),), None) for q in questions], embedder, policy)


def test_question_windows_overlap_by_half_and_point_into_the_document() -> None:
    document = "Intro sentence here. one two three four five six seven eight nine ten"
    start = document.index("one")
    passage = Passage(3, start, len(document), document[start:])
    windows = question_windows(passage, 4)
    assert [w.text for w in windows] == ["one two three four", "three four five six", "five six seven eight", "seven eight nine ten"]
    assert all(document[w.start : w.end] == w.text and w.document == 3 for w in windows)


def test_a_passage_no_longer_than_one_window_is_not_windowed() -> None:
    assert question_windows(Passage(0, 0, 19, "just four words here"), 4) == []
    assert question_windows(Passage(0, 0, 24, "five words are too many"), 0) == []  # 0 turns windows off


def test_qrd_takes_the_best_window_when_it_beats_the_passages() -> None:
    question = np.array([1.0, 0.0])
    passages = np.array([[0.6, 0.8]])
    assert compute_scores(question, passages, None, None).qrd == 0.6
    assert compute_scores(question, passages, None, None, question_windows=np.array([[0.9, 0.436], [0.2, 0.98]])).qrd == 0.9
    assert compute_scores(question, passages, None, None, question_windows=np.array([[0.1, 0.995]])).qrd == 0.6


def test_a_long_paragraph_is_good_retrieval_for_a_question_on_one_of_its_details(embedder) -> None:  # type: ignore[no-untyped-def]
    # Before: QRD was the question against the whole 137-word paragraph (0.31-0.47 here), below the threshold
    # derived from one-sentence FAQ answers (0.61): poor retrieval, though the paragraph holds every answer.
    before = ScoringPolicy(dataclasses.replace(DEFAULT_THRESHOLDS, qrd=0.61), qrd_window_words=0)
    assert [a.poor_retrieval for a in _assess(embedder, DETAIL_QUESTIONS, RESERVOIR, before)] == [True, True, True]
    now = ScoringPolicy(DEFAULT_THRESHOLDS)
    assert [a.poor_retrieval for a in _assess(embedder, DETAIL_QUESTIONS, RESERVOIR, now)] == [False, False, False]
    # ...while a paragraph on another subject of the same town stays poor retrieval for the same questions
    assert [a.poor_retrieval for a in _assess(embedder, DETAIL_QUESTIONS, BRASS_BAND, now)] == [True, True, True]


def test_only_the_passage_closest_to_the_question_is_windowed_in_a_second_call(embedder) -> None:  # type: ignore[no-untyped-def]
    spy = RecordingEmbedder(embedder)
    question = DETAIL_QUESTIONS[0]
    assess_batch([Interaction(question, (Document(BRASS_BAND), Document(RESERVOIR)), None)], spy, ScoringPolicy(DEFAULT_THRESHOLDS))
    first, second = spy.calls
    assert first == [question, BRASS_BAND, RESERVOIR]
    assert second == [w.text for w in question_windows(Passage(1, 0, len(RESERVOIR), RESERVOIR), question=question)]
    assert len(second) == 5  # of the 22 windows (137 words, 12 a window, 6 apart), those sharing a word with the question


def test_only_the_windows_sharing_a_word_with_the_question_are_compared_or_all_when_none_does() -> None:
    passage = Passage(1, 0, len(RESERVOIR), RESERVOIR)
    every = question_windows(passage)
    about = question_windows(passage, question="Where does the chapel bell from the flooded village hang today?")
    asked = ("chapel", "bell", "village", "hang")  # the question's content words, as they appear in the paragraph
    assert [w.text for w in about] == [w.text for w in every if any(word in w.text for word in asked)]
    assert 0 < len(about) < len(every)
    assert question_windows(passage, question="Who painted the Mona Lisa?") == every  # no word in common: every window
