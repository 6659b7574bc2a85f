"""The standing attack suite: one module per attack, run by `bench/attacks/run.py`
against a running server (docs/quality.md, "The attack suite")."""
