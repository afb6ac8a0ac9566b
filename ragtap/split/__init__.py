"""Splitting an injected reply into the answer the app receives and the model's supporting content."""

from ragtap.split.reply import split_reply
from ragtap.split.stream import REASONS, AnswerStreamExtractor, JsonStringDecoder, StreamResult, extract

__all__ = ["REASONS", "AnswerStreamExtractor", "JsonStringDecoder", "StreamResult", "extract", "split_reply"]
