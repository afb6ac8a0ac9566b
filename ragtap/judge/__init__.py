"""The LLM judge: the Ragas paper's metrics (faithfulness, answer relevance, context relevance) over an
OpenAI-compatible endpoint, offline (`ragtap judge`); online, `ragtap/pipeline/online_judge.py` runs it as a sampled,
rate-limited, budgeted stage after scoring, and `ragtap/exporters/judge.py` exports the results.

    from ragtap.judge import Judge, JudgeClient, JudgeEndpoint
    client = JudgeClient(JudgeEndpoint(base_url="http://127.0.0.1:8000/v1", model="gpt-4o-mini", api_key=key))
    judgement = await Judge(client, embedder).judge(question, [doc1, doc2], answer)
    judgement.score("faithfulness")         # float, or None with judgement.results["faithfulness"].reason

See docs/judge.md.
"""

from __future__ import annotations

import importlib
from typing import Any

# Imported on first use, so that `ragtap.config` can import ragtap.judge.settings without numpy or the SDK.
_EXPORTS: dict[str, str] = {
    "JudgeCallError": "client", "JudgeClient": "client", "JudgeEndpoint": "client", "Usage": "client",
    "ANSWER_RELEVANCE": "ragas", "CONTEXT_RELEVANCE": "ragas", "FAITHFULNESS": "ragas", "METRIC_NAMES": "ragas",
    "Judge": "ragas", "Judgement": "ragas", "MetricResult": "ragas", "answer_relevance_score": "ragas",
    "context_relevance_score": "ragas", "faithfulness_score": "ragas",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"ragtap.judge.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'ragtap.judge' has no attribute {name!r}")
