"""Recognise RAG chat-completions requests and extract their question and retrieved documents.

Pure functions, no I/O: `recognise(body, patterns)` is called by the proxy on every chat request.
`patterns_from_config` turns the `[[recognise.patterns]]` tables of config.toml into `CustomPattern`s.
"""

from ragtap.recognise.custom import CustomPattern, patterns_from_config
from ragtap.recognise.recogniser import FIELD_PROBLEMS, REASONS, Recognition, recognise
from ragtap.recognise.messages import recognise_messages
from ragtap.recognise.responses import recognise_responses

__all__ = ["FIELD_PROBLEMS", "REASONS", "CustomPattern", "Recognition", "patterns_from_config", "recognise", "recognise_messages", "recognise_responses"]
