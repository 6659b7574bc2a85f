"""The nudge answers only a writer holding a live writing claim: tests open one as a participant would."""

import re


def writing_claim_token(client):
    """Open the writing task (after a study link) and read the page's claim token."""
    page = client.get("/write/next/", follow=True).content.decode()
    found = re.search(r'data-claim="([0-9a-f-]+)"', page)
    return found.group(1) if found else ""
