"""Counting a read channel's writes to its sockets (its `on_send`)."""

from __future__ import annotations


class Writes:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1
