"""Loaders for the evaluation datasets, read from a local directory (nothing is ever downloaded).

The directory comes from `--data DIR`, else `RAGTAP_DATA`, else `../shared/data` relative to the working
directory, else relative to the repository root.  Each loader checks the format it expects and raises
`DatasetError` naming the file and the problem, so a wrong path or a different export fails clearly.

Layout (see ../shared/data/README.md):
    squad2/dev-v2.0.json           SQuAD 2.0, official format
    cloud_faq/cloud_faq_dataset.jsonl   Qdrant's cloud-platform FAQ: source, filename, question, answer
    mirage/dataset.json            MIRAGE questions: query_id, query, doc_name, answer (aliases)
    wikieval/wikieval.jsonl        WikiEval: question, context_v1, answer, ungrounded_answer, poor_answer
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SQUAD2 = "squad2/dev-v2.0.json"
CLOUD_FAQ = "cloud_faq/cloud_faq_dataset.jsonl"
MIRAGE = "mirage/dataset.json"
WIKIEVAL = "wikieval/wikieval.jsonl"


class DatasetError(ValueError):
    """A dataset that is missing or not in the expected format; the message names the file and the problem."""


# ----------------------------------------------------------------------------------------------- paths


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def resolve_data_dir(explicit: str | os.PathLike[str] | None = None, environ: dict[str, str] | None = None) -> Path:
    """`--data`, else $RAGTAP_DATA, else ../shared/data from the cwd, else from the repository root."""
    env = os.environ if environ is None else environ
    if explicit:
        path = Path(explicit)
        if not path.is_dir():
            raise DatasetError(f"--data {path}: not a directory")
        return path
    if env.get("RAGTAP_DATA"):
        path = Path(env["RAGTAP_DATA"])
        if not path.is_dir():
            raise DatasetError(f"RAGTAP_DATA={path}: not a directory")
        return path
    candidates = [Path.cwd() / ".." / "shared" / "data", repo_root() / ".." / "shared" / "data"]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate.resolve()
    tried = ", ".join(str(c) for c in candidates)
    raise DatasetError(f"no dataset directory: pass --data DIR or set RAGTAP_DATA (tried {tried})")


def dataset_file(data_dir: Path, relative: str) -> Path:
    path = data_dir / relative
    if not path.is_file():
        raise DatasetError(f"{path}: file not found (expected {relative} under the data directory {data_dir})")
    return path


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise DatasetError(f"{path}: cannot read ({error})") from error
    except json.JSONDecodeError as error:
        raise DatasetError(f"{path}: not valid JSON ({error})") from error


def read_jsonl(path: Path) -> Iterable[tuple[str, Any]]:
    """(`path:line`, decoded value) for each non-blank line; DatasetError names the line that is not JSON."""
    try:
        handle = open(path, encoding="utf-8")  # noqa: SIM115
    except OSError as error:
        raise DatasetError(f"{path}: cannot read ({error})") from error
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as error:
                raise DatasetError(f"{where}: not valid JSON ({error})") from error


def _require_str(row: Any, key: str, where: str, *, allow_empty: bool = False, allow_none: bool = False) -> str | None:
    if not isinstance(row, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(row).__name__}")
    if key not in row:
        raise DatasetError(f"{where}: missing field {key!r}")
    value = row[key]
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        raise DatasetError(f"{where}: field {key!r} must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise DatasetError(f"{where}: field {key!r} is empty")
    return value


def content_hash(texts: Iterable[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------- SQuAD 2.0


@dataclass(frozen=True, slots=True)
class SquadAnswer:
    text: str
    start: int


@dataclass(frozen=True, slots=True)
class SquadQuestion:
    id: str
    title: str
    context: str
    question: str
    answers: tuple[SquadAnswer, ...]
    is_impossible: bool
    paragraph: int  # index of the paragraph in the file (article order), to group questions on one paragraph


def load_squad2(data_dir: Path) -> list[SquadQuestion]:
    path = dataset_file(data_dir, SQUAD2)
    data = _read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise DatasetError(f"{path}: expected the SQuAD format, an object with a 'data' list of articles")
    questions: list[SquadQuestion] = []
    paragraph_index = 0
    for a, article in enumerate(data["data"]):
        where_a = f"{path}: data[{a}]"
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
            raise DatasetError(f"{where_a}: expected an article object with a 'paragraphs' list")
        title = article.get("title") if isinstance(article.get("title"), str) else f"article-{a}"
        for p, paragraph in enumerate(article["paragraphs"]):
            where_p = f"{where_a}.paragraphs[{p}]"
            context = _require_str(paragraph, "context", where_p)
            if not isinstance(paragraph.get("qas"), list):
                raise DatasetError(f"{where_p}: expected a 'qas' list")
            for q, qa in enumerate(paragraph["qas"]):
                where_q = f"{where_p}.qas[{q}]"
                question = _require_str(qa, "question", where_q)
                qid = _require_str(qa, "id", where_q)
                impossible = qa.get("is_impossible")
                if not isinstance(impossible, bool):
                    raise DatasetError(f"{where_q}: 'is_impossible' must be true or false (is this SQuAD 1.1? ragtap needs 2.0)")
                answers_raw = qa.get("answers")
                if not isinstance(answers_raw, list):
                    raise DatasetError(f"{where_q}: expected an 'answers' list")
                answers = []
                for n, answer in enumerate(answers_raw):
                    text = _require_str(answer, "text", f"{where_q}.answers[{n}]")
                    start = answer.get("answer_start")
                    if not isinstance(start, int):
                        raise DatasetError(f"{where_q}.answers[{n}]: 'answer_start' must be an integer")
                    answers.append(SquadAnswer(text, start))  # type: ignore[arg-type]
                if not impossible and not answers:
                    raise DatasetError(f"{where_q}: an answerable question without answers")
                questions.append(SquadQuestion(qid, title, context, question, tuple(answers), impossible, paragraph_index))  # type: ignore[arg-type]
            paragraph_index += 1
    if not questions:
        raise DatasetError(f"{path}: no questions found")
    return questions


# ------------------------------------------------------------------------------------------- cloud FAQ


@dataclass(frozen=True, slots=True)
class FaqRow:
    index: int  # line order in the file: a stable id
    source: str
    filename: str | None
    question: str
    answer: str


def load_cloud_faq(data_dir: Path) -> list[FaqRow]:
    path = dataset_file(data_dir, CLOUD_FAQ)
    rows = []
    for where, row in read_jsonl(path):
        source = _require_str(row, "source", where)
        question = _require_str(row, "question", where)
        answer = _require_str(row, "answer", where)
        filename = row.get("filename") if isinstance(row.get("filename"), str) else None
        rows.append(FaqRow(len(rows), source, filename, question, answer))  # type: ignore[arg-type]
    if not rows:
        raise DatasetError(f"{path}: no rows")
    return rows


# ---------------------------------------------------------------------------------------------- MIRAGE


@dataclass(frozen=True, slots=True)
class MirageQuestion:
    query_id: str
    query: str
    doc_name: str
    answers: tuple[str, ...]
    source: str


def load_mirage(data_dir: Path) -> list[MirageQuestion]:
    path = dataset_file(data_dir, MIRAGE)
    data = _read_json(path)
    if not isinstance(data, list):
        raise DatasetError(f"{path}: expected a JSON list of MIRAGE questions")
    out = []
    for i, row in enumerate(data):
        where = f"{path}: item {i}"
        qid = _require_str(row, "query_id", where)
        query = _require_str(row, "query", where)
        doc_name = _require_str(row, "doc_name", where)
        answers = row.get("answer")
        if isinstance(answers, str):
            answers = [answers]
        if not isinstance(answers, list) or not answers or not all(isinstance(a, str) and a.strip() for a in answers):
            raise DatasetError(f"{where}: 'answer' must be a non-empty list of alias strings")
        source = row.get("source") if isinstance(row.get("source"), str) else ""
        out.append(MirageQuestion(qid, query, doc_name, tuple(answers), source))  # type: ignore[arg-type]
    if not out:
        raise DatasetError(f"{path}: no questions")
    return out


@dataclass(frozen=True, slots=True)
class PoolChunk:
    index: int
    doc_name: str
    text: str


def load_pool(path: str | os.PathLike[str]) -> list[PoolChunk]:
    """A user-supplied MIRAGE-style document pool: JSON lines of {"doc_name": ..., "text": ...} (other fields
    are ignored; `doc_chunk` is accepted for `text`, as in MIRAGE's own release)."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"--pool {path}: file not found")
    chunks = []
    for where, row in read_jsonl(path):
        if isinstance(row, dict) and "text" not in row and "doc_chunk" in row:
            row = {**row, "text": row["doc_chunk"]}
        doc_name = _require_str(row, "doc_name", where)
        text = _require_str(row, "text", where)
        chunks.append(PoolChunk(len(chunks), doc_name, text))  # type: ignore[arg-type]
    if not chunks:
        raise DatasetError(f"{path}: the pool is empty")
    return chunks


# -------------------------------------------------------------------------------------------- WikiEval


# The two WikiEval tasks of the Ragas paper: the preferred candidate is always `answer`; the other one is this field.
WIKIEVAL_TASKS: dict[str, str] = {"faithfulness": "ungrounded_answer", "answer_relevance": "poor_answer"}


@dataclass(frozen=True)
class WikiEvalRow:
    """One WikiEval row, cleaned (see `wikieval_row`); `raw` keeps the line as the file has it."""

    row: int
    question: str  # "Question: " removed
    contexts: tuple[str, ...]  # context_v1's passages
    answer: str  # "Answer: " removed
    ungrounded_answer: str
    poor_answer: str  # the CSV export's stray trailing "'" removed
    raw: dict[str, Any] = field(repr=False, compare=False)

    @property
    def context(self) -> str:
        """The passages as one text, separated by blank lines."""
        return "\n\n".join(self.contexts)

    def candidate(self, task: str, preferred: bool) -> str:
        return self.answer if preferred else getattr(self, WIKIEVAL_TASKS[task])

    def raw_candidate(self, task: str, preferred: bool) -> str:
        return str(self.raw["answer"] if preferred else self.raw[WIKIEVAL_TASKS[task]])


def _strip_label(text: str, label: str) -> str:
    text = text.strip()
    if text.lower().startswith(label.lower() + ":"):
        return text[len(label) + 1 :].strip()
    return text


def wikieval_contexts(value: Any) -> tuple[str, ...]:
    """context_v1 is a Python list written as text ("['...', '...']"); a list, or a plain string (also one that
    only looks like a list), is taken as it is.  Empty passages are dropped."""
    if isinstance(value, list | tuple):
        return tuple(str(c) for c in value if str(c).strip())
    text = str(value).strip()
    if text.startswith("["):
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return (text,)
        if isinstance(parsed, list | tuple):
            return tuple(str(c) for c in parsed if str(c).strip())
    return (text,) if text else ()


def wikieval_row(record: dict[str, Any], index: int, where: str = "row") -> WikiEvalRow:
    """The one clean-up of a WikiEval line, for every experiment that reads it."""
    contexts = wikieval_contexts(record.get("context_v1", ""))
    if not contexts:
        raise DatasetError(f"{where}: 'context_v1' is empty")
    return WikiEvalRow(
        row=int(record["row"]) if isinstance(record.get("row"), int) else index,
        question=_strip_label(_require_str(record, "question", where) or "", "Question"),
        contexts=contexts,
        answer=_strip_label(_require_str(record, "answer", where) or "", "Answer"),
        ungrounded_answer=_strip_label(_require_str(record, "ungrounded_answer", where) or "", "Answer"),
        poor_answer=_strip_label(_require_str(record, "poor_answer", where) or "", "Answer").rstrip("'").strip(),
        raw=record,
    )


def load_wikieval(data: Path | str, limit: int | None = None) -> list[WikiEvalRow]:
    """`data` is the data directory (wikieval/wikieval.jsonl under it) or the .jsonl file itself."""
    data = Path(data)
    path = data if data.suffix == ".jsonl" else dataset_file(data, WIKIEVAL)
    out = [wikieval_row(row, index, where) for index, (where, row) in enumerate(read_jsonl(path))]
    if not out:
        raise DatasetError(f"{path}: no rows")
    return out[:limit] if limit is not None else out


# --------------------------------------------------------------------------------------------- sampling


def sample_two_classes(
    positives: Sequence[int], negatives: Sequence[int], total: int, positive_share: float, seed: int
) -> tuple[list[int], list[int]]:
    """A seeded sample of `total` items with round(total * positive_share) positives, without replacement;
    each list comes back in its input order.  Fails when a class has too few items."""
    import numpy as np

    if total < 1:
        raise DatasetError("the sample size must be at least 1")
    want_pos = int(round(total * positive_share))
    want_neg = total - want_pos
    if want_pos > len(positives) or want_neg > len(negatives):
        raise DatasetError(
            f"cannot sample {want_pos} positives and {want_neg} negatives: the data have {len(positives)} and {len(negatives)}"
        )
    rng = np.random.default_rng(seed)
    pos = sorted(rng.choice(len(positives), size=want_pos, replace=False).tolist())
    neg = sorted(rng.choice(len(negatives), size=want_neg, replace=False).tolist())
    return [positives[i] for i in pos], [negatives[i] for i in neg]
