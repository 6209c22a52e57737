"""Module docstring."""
import os, sys as system
from .util import helper, other as o
from ..pkg.mod import (
    A,
    B,
)
from . import sibling

MAX_SIZE = 10
name: str = "x"
__all__ = ["Outer"]


# Comment doc for the function.
def top(a: int,
        b: str = "x") -> dict[str, int]:
    def inner():
        return 1
    return {}


@dataclass
@other.decorator(arg=1)
class Outer(Base, metaclass=Meta):
    '''Outer does things.

    More text.
    '''
    x = 1

    class Inner:
        """Nested."""
        def method(self):
            pass

    @property
    def value(self) -> int:
        """The value."""
        return self.x

    async def fetch(self, url):
        s = """
def fake():
    pass
"""
        return s

    def one_liner(self): return 1


if TYPE_CHECKING:
    from typing import Protocol

    def guarded() -> None: ...
else:
    pass


async def main():
    await top(1)
