"""The log's table refuses TRUNCATE too, and lets one deliberate redaction through (docs/audit.md).

Migration 0001 refused UPDATE and DELETE row by row; TRUNCATE fires no row trigger, so an app's
`TRUNCATE audit_auditentry` emptied the log. Now a statement trigger refuses it.

Erasing personal data from past entries (a participant's or researcher's right to erasure) must
still be possible: an UPDATE goes through when the transaction has said so with
`SET LOCAL audit.allow_redaction = on`, which only `audit.services.redact` does, and even then it
may change what an entry says (actor, subject, before, after, reason), never which entry it is
(id, time, team, action, subject type, subject id): a redaction blanks words, it does not rewrite
history. DELETE stays refused whatever is set.

A TRUNCATE goes through when `audit.allow_truncate = on` is set: a test database's flush by a role
that cannot turn triggers off (the suite's superuser flush turns them off with
`session_replication_role = replica` and needs nothing).
"""

from django.db import migrations

APPEND_ONLY = """
CREATE OR REPLACE FUNCTION audit_entry_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND current_setting('audit.allow_redaction', true) = 'on' THEN
        IF NEW.id IS DISTINCT FROM OLD.id OR NEW.at IS DISTINCT FROM OLD.at
           OR NEW.team_id IS DISTINCT FROM OLD.team_id OR NEW.action IS DISTINCT FROM OLD.action
           OR NEW.subject_type IS DISTINCT FROM OLD.subject_type
           OR NEW.subject_id IS DISTINCT FROM OLD.subject_id THEN
            RAISE EXCEPTION 'a redaction of the audit log changes what an entry says, not which entry it is';
        END IF;
        RETURN NEW;
    END IF;
    IF TG_OP = 'TRUNCATE' AND current_setting('audit.allow_truncate', true) = 'on' THEN
        RETURN NULL;
    END IF;
    RAISE EXCEPTION 'the audit log is append-only: % refused', TG_OP;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER audit_entry_not_truncated BEFORE TRUNCATE ON audit_auditentry
    FOR EACH STATEMENT EXECUTE FUNCTION audit_entry_append_only();
"""

UPDATE_AND_DELETE_ONLY = """
DROP TRIGGER audit_entry_not_truncated ON audit_auditentry;
CREATE OR REPLACE FUNCTION audit_entry_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the audit log is append-only: % refused', TG_OP;
END;
$$ LANGUAGE plpgsql;
"""


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_append_only_log")]

    operations = [migrations.RunSQL(APPEND_ONLY, UPDATE_AND_DELETE_ONLY)]
