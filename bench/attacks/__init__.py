"""The standing attack suite of issue 39: one module per attack, run by `bench/attacks/run.py`
against a running server (docs/quality.md, "The attack suite")."""
