"""`present(x)`: the value of a call that may return None where the test's set-up means it does not.

A claim when there is work, a row that was just made, a match on a page the test rendered: the
service or query is typed `X | None`, the test knows which. A None here fails the test at once,
as reading an attribute of it would.
"""

from typing import TypeVar

T = TypeVar("T")


def present(value: T | None) -> T:
    assert value is not None
    return value
