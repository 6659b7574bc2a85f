"""The bonuses payers hold, summed per connection, session, cause, currency, payer and state, in a
table kept by triggers on the payments (PostgreSQL only).

A payment row lives while its bonus is in flight and moves between states; the ledger row it pays
never changes. So one function, on each statement that inserts, updates or deletes payments (from
the statement's transition tables), adds each new row to its group and takes each old row from its
group: its count, its bonus's amount and its bonus's id hash (`quality.bonus_lines.ids_hash`). An
update that moves no payment to another group (a lease, an attempt, a batch) writes nothing. The
groups are upserted in key order, so two statements lock them in the same order; TRUNCATE empties it.

The tally counts payment rows, so a payment row must hold an unpaid earned bonus, as the payment
machine has it (the transaction that writes a bonus's paid row deletes its payment): a constraint
trigger on each side, checked at commit, now refuses a payment of a paid bonus (or of a paid row)
and a paid row whose bonus a payer still holds. Rows left so before are deleted first: the ledger
says those bonuses were paid.
"""

import django.db.models.deletion
from django.db import migrations, models


PAYMENTS = "markets_bonuspayment"
LEDGER = "quality_bonusentry"
TABLE = "markets_heldbonustally"

# An id's hash: the first 60 bits of the MD5 of its decimal digits (`quality.bonus_lines.id_hash`).
ID_HASH = "('x' || left(md5(({id})::text), 15))::bit(60)::bigint::numeric"

COLUMNS = "connection_id, study_session_id, cause, currency, payer, state, bonuses, amount, ids_hash"

# `{moved}`: rows (connection_id, earned_id, payer, state, sign), +1 a row that joins a group, -1 one that leaves.
GROUPED = f"""
    SELECT moved.connection_id, bonus.study_session_id, bonus.cause, bonus.currency, moved.payer, moved.state,
           sum(moved.sign), sum(moved.sign * bonus.amount), sum(moved.sign * {ID_HASH.format(id="bonus.id")})
    FROM ({{moved}}) AS moved INNER JOIN {LEDGER} AS bonus ON bonus.id = moved.earned_id
    GROUP BY 1, 2, 3, 4, 5, 6
    HAVING sum(moved.sign) <> 0 OR sum(moved.sign * bonus.amount) <> 0
        OR sum(moved.sign * {ID_HASH.format(id="bonus.id")}) <> 0
    ORDER BY 1, 2, 3, 4, 5, 6
"""

UPSERT = f"""
    INSERT INTO {TABLE} AS tally ({COLUMNS})
    {{grouped}}
    ON CONFLICT (connection_id, study_session_id, cause, currency, payer, state) DO UPDATE SET
        bonuses = tally.bonuses + EXCLUDED.bonuses,
        amount = tally.amount + EXCLUDED.amount,
        ids_hash = tally.ids_hash + EXCLUDED.ids_hash;
"""

ADDED = "SELECT connection_id, earned_id, payer, state, 1 AS sign FROM added_payments"
REMOVED = "SELECT connection_id, earned_id, payer, state, -1 AS sign FROM removed_payments"
# An update's new rows join their groups and its old rows leave theirs: a row the update moved to no
# other group (a lease, an attempt, a batch) cancels itself, and a group left as it was is not written.
MOVED = f"{ADDED.replace('added_payments', 'changed_payments')} UNION ALL {REMOVED.replace('removed_payments', 'unchanged_payments')}"

# Checked at commit (the payment machine writes the paid row, then deletes the payment), each by keys.
INVARIANT = f"""
DELETE FROM {PAYMENTS} payment USING {LEDGER} bonus
    WHERE bonus.id = payment.earned_id
    AND (bonus.kind <> 'earned' OR EXISTS (SELECT 1 FROM {LEDGER} paid WHERE paid.pays_id = bonus.id));

CREATE FUNCTION markets_payment_of_an_unpaid_bonus() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = '{PAYMENTS}' THEN
        IF EXISTS (SELECT 1 FROM {PAYMENTS} WHERE id = NEW.id AND earned_id = NEW.earned_id)
            AND (EXISTS (SELECT 1 FROM {LEDGER} WHERE id = NEW.earned_id AND kind <> 'earned')
                 OR EXISTS (SELECT 1 FROM {LEDGER} WHERE pays_id = NEW.earned_id)) THEN
            RAISE EXCEPTION 'bonus % is paid: no payer may hold it', NEW.earned_id USING ERRCODE = 'check_violation';
        END IF;
    ELSIF EXISTS (SELECT 1 FROM {PAYMENTS} WHERE earned_id = NEW.pays_id) THEN
        RAISE EXCEPTION 'bonus % is paid while a payer holds it: its payment is deleted with the paid row', NEW.pays_id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER markets_payment_of_an_unpaid_bonus AFTER INSERT OR UPDATE OF earned_id ON {PAYMENTS}
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION markets_payment_of_an_unpaid_bonus();
CREATE CONSTRAINT TRIGGER markets_paid_bonus_held_by_no_payer AFTER INSERT ON {LEDGER}
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.kind = 'paid')
    EXECUTE FUNCTION markets_payment_of_an_unpaid_bonus();
"""

CREATE = f"""
CREATE FUNCTION markets_held_bonus_tally_moved() RETURNS trigger LANGUAGE plpgsql
    -- The statements' plans are kept for the connection, made on its first payment; made on a new
    -- deployment's empty ledger, a scan of the ledger would be kept to find each payment's bonus.
    -- Each is found by its key: a nested loop over the statement's rows, an index scan each.
    SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
    AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {UPSERT.format(grouped=GROUPED.format(moved=ADDED))}
    ELSIF TG_OP = 'DELETE' THEN
        {UPSERT.format(grouped=GROUPED.format(moved=REMOVED))}
    ELSE
        {UPSERT.format(grouped=GROUPED.format(moved=MOVED))}
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER markets_held_bonus_tally_added AFTER INSERT ON {PAYMENTS}
    REFERENCING NEW TABLE AS added_payments FOR EACH STATEMENT EXECUTE FUNCTION markets_held_bonus_tally_moved();
CREATE TRIGGER markets_held_bonus_tally_removed AFTER DELETE ON {PAYMENTS}
    REFERENCING OLD TABLE AS removed_payments FOR EACH STATEMENT EXECUTE FUNCTION markets_held_bonus_tally_moved();
CREATE TRIGGER markets_held_bonus_tally_changed AFTER UPDATE ON {PAYMENTS}
    REFERENCING OLD TABLE AS unchanged_payments NEW TABLE AS changed_payments
    FOR EACH STATEMENT EXECUTE FUNCTION markets_held_bonus_tally_moved();

CREATE FUNCTION markets_held_bonus_tally_emptied() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE {TABLE};
    RETURN NULL;
END $$;
CREATE TRIGGER markets_held_bonus_tally_emptied AFTER TRUNCATE ON {PAYMENTS}
    FOR EACH STATEMENT EXECUTE FUNCTION markets_held_bonus_tally_emptied();

-- Filled last: the triggers' lock on the payments, held to the migration's commit, keeps every
-- payment written meanwhile waiting, so none is written between the fill's read and the triggers.
INSERT INTO {TABLE} ({COLUMNS})
{GROUPED.format(moved=f"SELECT connection_id, earned_id, payer, state, 1 AS sign FROM {PAYMENTS}")};
"""

DROP = f"""
DROP TRIGGER IF EXISTS markets_payment_of_an_unpaid_bonus ON {PAYMENTS};
DROP TRIGGER IF EXISTS markets_paid_bonus_held_by_no_payer ON {LEDGER};
DROP FUNCTION IF EXISTS markets_payment_of_an_unpaid_bonus();
DROP TRIGGER IF EXISTS markets_held_bonus_tally_added ON {PAYMENTS};
DROP TRIGGER IF EXISTS markets_held_bonus_tally_removed ON {PAYMENTS};
DROP TRIGGER IF EXISTS markets_held_bonus_tally_changed ON {PAYMENTS};
DROP TRIGGER IF EXISTS markets_held_bonus_tally_emptied ON {PAYMENTS};
DROP FUNCTION IF EXISTS markets_held_bonus_tally_moved();
DROP FUNCTION IF EXISTS markets_held_bonus_tally_emptied();
"""


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(INVARIANT, params=None)
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("crowd", "0035_session_endings"),
        ("markets", "0006_connection_check_outcome"),
        ("quality", "0014_bonus_tally"),
    ]

    operations = [
        migrations.CreateModel(
            name="HeldBonusTally",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("cause", models.CharField(max_length=12)),
                ("currency", models.CharField(max_length=3)),
                (
                    "payer",
                    models.CharField(
                        choices=[
                            ("api", "the market's API (the pay button: Prolific or MTurk)"),
                            ("file", "a payment file, paid on the market's website by a researcher"),
                        ],
                        max_length=4,
                    ),
                ),
                (
                    "state",
                    models.CharField(
                        choices=[
                            ("claimed", "claimed by a payer, nothing sent"),
                            (
                                "sent",
                                "sent (an API call, or a downloaded payment file): only the market's record or a researcher settles it",
                            ),
                            (
                                "unknown",
                                "sent, and the market's answer did not prove whether it paid: settled only by its own record, read after the last attempt",
                            ),
                            ("aside", "set aside: the market refused its participant; paid by hand or released"),
                            ("released", "released: nothing was paid, owed again"),
                        ],
                        max_length=8,
                    ),
                ),
                ("bonuses", models.IntegerField()),
                ("amount", models.DecimalField(decimal_places=2, max_digits=14)),
                ("ids_hash", models.DecimalField(decimal_places=0, max_digits=40)),
                (
                    "connection",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="markets.marketconnection",
                    ),
                ),
                (
                    "study_session",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="crowd.studysession",
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "held bonus tallies",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("connection", "study_session", "cause", "currency", "payer", "state"),
                        name="one_held_bonus_tally_per_group",
                    )
                ],
            },
        ),
        migrations.RunPython(create, drop),
    ]
