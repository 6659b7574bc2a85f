"""How hypotheses were written: typing evidence from the browser, judgements from it, and
what a study does with them (docs/quality.md, "How hypotheses were written")."""
