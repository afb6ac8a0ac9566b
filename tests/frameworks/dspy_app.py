"""A DSPy RAG module as its users write it (the DSPy RAG tutorial), run inside the pinned DSPy venv by
tests/test_frameworks.py.

    python dspy_app.py BASE_URL LAYOUT STREAM  ->  prints {"answer": ..., "requests": [request bodies]}

Only the base URL points it at ragtap; the prompt is DSPy's ChatAdapter.  The passages are synthetic.
STREAM=1 runs the module through `dspy.streamify` with a `StreamListener` on the `response` field (DSPy's
streaming API): the LM call is a streamed completion, and the app gets the field's chunks and the final prediction.
"""

from __future__ import annotations

import json
import sys

import dspy

QUESTION = "Which port does the billing service listen on?"
TEXTS = [
    "The billing service listens on port 8443 behind the internal load balancer.",
    "The billing service is owned by the Falcon team; on-call rotates every Monday.",
]


class RAG(dspy.Module):
    def __init__(self) -> None:
        self.respond = dspy.ChainOfThought("context, question -> response")

    def forward(self, question: str):  # type: ignore[no-untyped-def]
        return self.respond(context=TEXTS, question=question)


def main() -> None:
    base_url, _layout, stream = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    lm = dspy.LM("openai/gpt-test", api_base=base_url, api_key="sk-test", cache=False, num_retries=0)
    dspy.configure(lm=lm)
    streamed: list[str] = []
    if stream:
        program = dspy.streamify(RAG(), stream_listeners=[dspy.streaming.StreamListener(signature_field_name="response")],
                                 async_streaming=False)
        prediction = None
        for item in program(question=QUESTION):
            if isinstance(item, dspy.streaming.StreamResponse):
                streamed.append(item.chunk)
            elif isinstance(item, dspy.Prediction):
                prediction = item
        assert prediction is not None, "streamify yielded no final prediction"
    else:
        prediction = RAG()(question=QUESTION)
    # LiteLLM's transport is not httpx here: the messages DSPy sent are in the LM's own history.
    requests = [{"messages": entry["messages"], "stream": bool(entry.get("kwargs", {}).get("stream"))} for entry in lm.history]
    print(json.dumps({"answer": prediction.response, "streamed": "".join(streamed), "requests": requests}))


if __name__ == "__main__":
    main()
