"""Loader problems: messages ordered by their place in the source, the first MAX_PROBLEMS kept."""

from __future__ import annotations

from typing import Iterable

from .model import MAX_PROBLEMS


class _Problems:
    """Problem messages with a sort key (position in the source, sub-order); only the first
    MAX_PROBLEMS by that order are kept, all are counted."""

    def __init__(self) -> None:
        self.items: list[tuple[int, int, int, str]] = []
        self.count = 0

    def _prune(self) -> None:
        if len(self.items) > 8 * MAX_PROBLEMS:
            self.items = sorted(self.items)[:MAX_PROBLEMS]

    def add(self, pos: int, sub: int, msg: str) -> None:
        self.count += 1
        self.items.append((pos, sub, len(self.items), msg))
        self._prune()

    def add_first(self, count: int, first: Iterable[tuple[int, int, str]]) -> None:
        """``count`` problems of one kind, of which ``first`` (at least the MAX_PROBLEMS
        earliest) are spelled out."""
        self.count += count
        for pos, sub, msg in first:
            self.items.append((pos, sub, len(self.items), msg))
        self._prune()

    def result(self) -> list[str]:
        return [m for *_, m in sorted(self.items)[:MAX_PROBLEMS]]

