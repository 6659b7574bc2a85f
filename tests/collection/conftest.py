"""The writing tests' fixtures."""

import pytest

from collection import writing_claims


@pytest.fixture(autouse=True)
def claim_function_as_the_code_builds_it():
    """Each test runs the writing claim's function as the code builds it at that moment, not one an
    earlier test of the process built (a mutation run forks each mutant's tests from one process):
    the function's name is a hash of its text, so an unchanged one is found, not made again."""
    writing_claims._claim_statement.cache_clear()
