"""Text kept as it streams in, in little more memory than the text itself.

A streamed reply arrives in pieces of a token or two (~4 characters).  Kept as a list of those pieces, each is a
str object of its own (~50 bytes of header, plus the list's pointer): a 3 MB answer took 46 MB, held for as long
as the stream lasted -- and an app that stops reading makes that as long as it likes (issue 24).  `TextPieces`
joins every `FANOUT` pieces into one string, and every `FANOUT` of those into one again, and so on: each character
is copied once per level (log_64 of the piece count: 4 levels for 16 million pieces), and what is kept is the text
plus a few hundred string headers.
"""

from __future__ import annotations

FANOUT = 64


class TextPieces:
    __slots__ = ("_levels", "size")

    def __init__(self) -> None:
        # _levels[0] holds the newest pieces; each higher level holds joined runs of the level below, older ones.
        self._levels: list[list[str]] = [[]]
        self.size = 0  # characters appended

    def append(self, text: str) -> None:
        if not text:
            return
        self.size += len(text)
        levels = self._levels
        levels[0].append(text)
        level = 0
        while len(levels[level]) >= FANOUT:
            joined = "".join(levels[level])
            levels[level] = []
            level += 1
            if level == len(levels):
                levels.append([])
            levels[level].append(joined)

    def text(self) -> str:
        return "".join("".join(level) for level in reversed(self._levels))

    def __bool__(self) -> bool:
        return self.size > 0
