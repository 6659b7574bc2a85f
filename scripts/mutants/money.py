"""Mutants of the money path: each is a bug a test must catch, by the behaviour it names.

Read by the mutation pass (scripts/mutation_pass.py): each mutant replaces `old` (which occurs once
in `path`) with `new` in a copy of the checkout and runs `tests`; a mutant the tests pass is a bug
they would let through. The first items guard payments whose outcome is unknown or refused; the rest
are other money behaviours (what is paid, how much, to whom, when).
"""

from scripts.mutation_pass import Mutant

PAYMENTS_PY = "markets/payments.py"
HAND_PAYMENTS_PY = "markets/hand_payments.py"
REVIEWS_PY = "markets/reviews.py"
EVENTS_PY = "markets/events.py"
CONNECTIONS_PY = "markets/connections.py"
GUARDS = "tests/markets/test_money_guards.py"
SECRETS = "tests/markets/test_secrets_guards.py"
PAYMENTS = "tests/markets/test_payments.py"
HOLDS = "tests/markets/test_payments_follow_holds.py"
OWED = "tests/markets/test_one_owed_rule.py"
REVIEWS = "tests/markets/test_reviews_queue.py"
MACHINE = "tests/markets/test_payment_machine.py"
AMBIGUOUS = "tests/markets/test_ambiguous_answers.py"
ANSWERS_PY = "markets/answers.py"

MUTANTS = [
    # --- item 1: an outcome unknown, the market's record behind ---
    Mutant(
        path=ANSWERS_PY,
        old="    if error.status is None:\n        return False\n",
        new="    if error.status is None:\n        return True\n",
        tests=[GUARDS, AMBIGUOUS],
        behaviour="58.1: a pay whose answer was lost frees its bonuses, so the next press pays them again",
    ),
    Mutant(
        path=PAYMENTS_PY,
        old="owed = [entry for entry in owed if entry.worker_id not in waiting]",
        new="owed = list(owed)",
        tests=[GUARDS],
        behaviour="58.1: a participant's new bonus is paid beside an unsure bulk bonus of theirs (the reconcile's sum "
        "becomes ambiguous)",
    ),
    Mutant(
        path=PAYMENTS_PY,
        old="on_market.get(pid, 0) >= int(batch.paid_before_cents.get(pid, 0)) + int(cents)",
        new="True",
        tests=[GUARDS],
        behaviour="58.1: an unsure bulk bonus is confirmed paid without the market's record showing it",
    ),
    Mutant(
        path=PAYMENTS_PY,
        old="            payment.request_token,\n",
        new="            secrets.token_hex(8),\n",
        tests=[GUARDS, PAYMENTS],
        behaviour="58.1: an MTurk bonus resent after a lost answer goes under a new token, so MTurk pays it twice",
    ),
    Mutant(
        path=PAYMENTS_PY,
        old='if any(tag in str(row.get("Reason", "")) for row in listed):',
        new="if False:",
        tests=[PAYMENTS, GUARDS],
        behaviour="MTurk's ListBonusPayments is ignored: a bonus MTurk paid is never confirmed",
    ),
    # --- item 2: a 5xx from the pay call ---
    Mutant(
        path=ANSWERS_PY,
        old="        return error.status in PROLIFIC_NOTHING_DONE\n",
        new="        return error.status in PROLIFIC_NOTHING_DONE or error.status >= 500\n",
        tests=[GUARDS, AMBIGUOUS],
        behaviour="58.2: a 5xx answer to the pay call frees the bonuses, so a bulk bonus Prolific paid is paid again",
    ),
    Mutant(
        path=PAYMENTS_PY,
        old="if _pay_failed(outcome, connection, payment_ids, error):",
        new="if _pay_failed(outcome, connection, payment_ids, error) or True:",
        tests=[GUARDS],
        behaviour="58.2: a bulk bonus whose pay got a 5xx is given up, so it is never confirmed from the record",
    ),
    # --- item 3: a participant paid before ---
    Mutant(
        path=PAYMENTS_PY,
        old="on_market.get(pid, 0) >= int(batch.paid_before_cents.get(pid, 0)) + int(cents)",
        new="on_market.get(pid, 0) >= int(cents)",
        tests=[GUARDS],
        behaviour="58.3: a participant's earlier bonuses make an unpaid bulk bonus look paid",
    ),
    Mutant(
        path=PAYMENTS_PY,
        old="study=study, kind=BonusKind.PAID, worker_id__in=list(worker_ids)",
        new="study=study, worker_id__in=list(worker_ids)",
        tests=[GUARDS],
        behaviour="58.3: what the ledger paid before counts earned rows too, so a paid bulk bonus is never confirmed",
    ),
    # --- item 4: "Prolific shows it was not paid" ---
    Mutant(
        path=PAYMENTS_PY,
        old="if locked.state != BatchState.PAYING:",
        new="if locked.state == BatchState.NEW:",
        tests=[GUARDS],
        behaviour="58.4: a confirmed (paid) bulk bonus can be marked not paid",
    ),
    Mutant(
        path=PAYMENTS_PY,
        old="    asked = reconcile_payments(batch.connection, by=by)\n",
        new="    asked = PaymentOutcome()\n",
        tests=[GUARDS],
        behaviour="52.1/58.4: 'mark bulk bonus as not paid' frees a bulk bonus Prolific's record shows paid",
    ),
    Mutant(
        path="markets/selectors.py",
        old="BonusBatch.objects.filter(connection__study=study, pk=batch_id)",
        new="BonusBatch.objects.filter(pk=batch_id)",
        tests=[GUARDS],
        behaviour="58.4: another study's bulk bonus can be marked not paid from this study's page",
    ),
    # --- item 5: bonuses the connected market cannot pay ---
    Mutant(
        path=PAYMENTS_PY,
        old='_release_payments(strangers, "Not a Prolific participant: pay this bonus by hand.")',
        new="pass",
        tests=[GUARDS],
        behaviour="58.5: bonuses of workers who did not come from Prolific stay claimed instead of refused",
    ),
    Mutant(
        path=PAYMENTS_PY,
        old='_release_payments([payment.pk], "Not an MTurk worker with an assignment: pay this bonus by hand.")',
        new="pass",
        tests=[GUARDS],
        behaviour="58.5: bonuses of workers who did not come from MTurk stay claimed instead of refused",
    ),
    # --- item 6: the webhook's signature and timestamp ---
    Mutant(
        path=EVENTS_PY,
        old="hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256)",
        new="hmac.new(secret.encode(), body, hashlib.sha256)",
        tests=[SECRETS],
        behaviour="58.6: a signature that leaves out the timestamp is accepted (a replay with a fresh timestamp)",
    ),
    Mutant(
        path=EVENTS_PY,
        old="if abs((_now() - sent_at).total_seconds()) > settings.MARKET_WEBHOOK_TOLERANCE_SECONDS:",
        new="if (_now() - sent_at).total_seconds() > settings.MARKET_WEBHOOK_TOLERANCE_SECONDS:",
        tests=[SECRETS],
        behaviour="58.6: a webhook timestamped in the future is accepted",
    ),
    # --- item 7: the sealed credentials ---
    Mutant(
        path="markets/sealing.py",
        old="return MultiFernet([Fernet(key) for key in raw])",
        new="return MultiFernet([Fernet(raw[0])])",
        tests=[SECRETS],
        behaviour="58.7: after a rotation only the new key opens: credentials sealed under the old one are lost",
    ),
    Mutant(
        path="markets/sealing.py",
        old="return MultiFernet([Fernet(key) for key in raw])",
        new="return MultiFernet([Fernet(key) for key in reversed(raw)])",
        tests=[SECRETS],
        behaviour="58.7: the last key seals, so a rotation never moves a credential to the new key",
    ),
    Mutant(
        path="markets/sealing.py",
        old="    except InvalidToken as error:\n        raise SealingUnavailable(",
        new="    except InvalidToken as error:\n        return {}\n        raise SealingUnavailable(",
        tests=[SECRETS],
        behaviour="58.7: credentials sealed under another key open silently as {} (requests go out without them)",
    ),
    Mutant(
        path=CONNECTIONS_PY,
        old="sealed_secret = seal_text(webhook_secret.strip() or kept_secret)",
        new="sealed_secret = seal_text(webhook_secret.strip()) if webhook_secret.strip() else "
        "(existing.sealed_webhook_secret if existing else '')",
        tests=[SECRETS],
        behaviour="58.7: saving a connection leaves its webhook secret sealed under the old key only",
    ),
    Mutant(
        path=PAYMENTS_PY,
        old="    client_for(connection, by)\n    outcome = reconcile_payments(connection, by=by)",
        new="    outcome = reconcile_payments(connection, by=by)",
        tests=[SECRETS],
        behaviour="58.7: a payer whose credentials cannot be opened claims the owed bonuses and strands them",
    ),
    # --- other money behaviours ---
    Mutant(
        path=PAYMENTS_PY,
        old='f"{pid},{Decimal(cents) / CENTS:.2f}\\n"',
        new='f"{pid},{Decimal(cents):.2f}\\n"',
        tests=[PAYMENTS],
        behaviour="Prolific's bulk bonus file names cents as pounds: every participant is paid 100 times over",
    ),
    Mutant(
        path="markets/selectors.py",
        old="return bonuses.unpaid(study).filter(free_of_payers())",
        new="return BonusEntry.objects.filter(study=study, kind=BonusKind.EARNED, payment__isnull=True)"
        ".filter(free_of_payers())",
        tests=[HOLDS],
        behaviour="the one 'owed' rule forgets holds: the payer pays the bonuses of a session whose code is held",
    ),
    Mutant(
        path=PAYMENTS_PY,
        old="    result = bonuses.mark_paid(\n        study, earned_ids,",
        new="    result = dict(paid=0, amount=0) or bonuses.mark_paid(\n        study, earned_ids,",
        tests=[PAYMENTS],
        behaviour="a confirmed payment writes no paid row in the ledger, so the bonus page still shows it owed",
    ),
    Mutant(
        path="markets/selectors.py",
        old="return Q(market_payment__isnull=True) | Q(market_payment__state=PaymentState.RELEASED)",
        new="return Q(market_payment__isnull=True) | ~Q(market_payment__state=PaymentState.ASIDE)",
        tests=[OWED, GUARDS],
        behaviour="52.1: a bonus another payer holds (sent by the API, claimed by a file) counts as owed again",
    ),
    # --- one 'owed' rule for every payer ---
    Mutant(
        path="dashboard/views/quality.py",
        old="body = write(market_payments.claim_for_file(study, market))",
        new="body = write(list(bonuses.unpaid(study)))",
        tests=[OWED],
        behaviour="52.1: the payment file lists bonuses the API is paying and claims nothing (paid twice)",
    ),
    Mutant(
        path=HAND_PAYMENTS_PY,
        old="        if in_flight:\n            raise bonuses.PaymentRefused(",
        new="        if False:\n            raise bonuses.PaymentRefused(",
        tests=[OWED],
        behaviour="52.1: 'mark paid' from a stale page marks bonuses the API is paying",
    ),
    Mutant(
        path=HAND_PAYMENTS_PY,
        old="if bonuses.file_of(entry) != file or entry.worker_id in waiting:",
        new="if bonuses.file_of(entry) != file:",
        tests=[OWED],
        behaviour="52.1: a payment file pays a participant whose API bulk bonus is unsure (its reconcile then "
        "counts the file's money as the bulk bonus's)",
    ),
    Mutant(
        path=PAYMENTS_PY,
        old="if refused_outright(error) and len(part) > 1:",
        new="if False:",
        tests=[OWED],
        behaviour="52.1: one participant Prolific refuses sets every participant's bonus aside",
    ),
    Mutant(
        path=PAYMENTS_PY,
        old="                state=PaymentState.ASIDE, last_error=str(error)[:300]",
        new="                state=PaymentState.RELEASED, last_error=str(error)[:300]",
        tests=[OWED],
        behaviour="52.1: a refused participant is not set aside but tried again on every press",
    ),
    Mutant(
        path="quality/bonuses.py",
        old='    if not reason:\n        raise PaymentRefused("A discretionary bonus needs a reason',
        new='    if False:\n        raise PaymentRefused("A discretionary bonus needs a reason',
        tests=[OWED],
        behaviour="52.1: a discretionary bonus is given without a reason",
    ),
    Mutant(
        path=REVIEWS_PY,
        old="        if isinstance(error, MarketTimeout) or not refused_outright(error):",
        new="        if isinstance(error, MarketTimeout):",
        tests=[REVIEWS],
        behaviour="52.1: an approval pressed during a network failure is marked refused by the market",
    ),
    Mutant(
        path="markets/tasks.py",
        old='done.append(reviews.retry_queued_reviews(connection).line("Decided (queued)"))',
        new='done.append("")',
        tests=[REVIEWS],
        behaviour="52.1: nothing sends a queued approval again",
    ),
    # --- money never pays twice on an ambiguous answer ---
    Mutant(
        path=ANSWERS_PY,
        old="        return error.status in PROLIFIC_NOTHING_DONE\n",
        new="        return error.status in PROLIFIC_NOTHING_DONE or 400 <= error.status < 500\n",
        tests=[AMBIGUOUS],
        behaviour="70.5: a 409 after Prolific paid frees the bulk bonus's bonuses, so the next press pays them again",
    ),
    Mutant(
        path=PAYMENTS_PY,
        old="        if not read_settles(locked.pay_sent_at, locked.record_read_at):",
        new="        if False:",
        tests=[AMBIGUOUS],
        behaviour="70.5: 'Prolific shows it was not paid' is believed while Prolific's record lags behind the pay",
    ),
    Mutant(
        path=ANSWERS_PY,
        old="    return record_read_at is not None and record_read_at >= settled_after(last_attempt)",
        new="    return record_read_at is not None and record_read_at >= last_attempt",
        tests=[AMBIGUOUS],
        behaviour="70.5: a read of the record made just after the pay, before it could show, says 'not paid'",
    ),
    # --- the one payment machine ---
    Mutant(
        path=PAYMENTS_PY,
        old="connection=connection, payer=Payer.API, state__in=UNSETTLED_SENDS, lease_until__lt=mturk_before",
        new="connection=connection, state__in=UNSETTLED_SENDS, lease_until__lt=mturk_before",
        tests=[MACHINE],
        behaviour="52.1: MTurk's reconcile sends again a downloaded file's bonuses the researcher paid on the website",
    ),
    Mutant(
        path=PAYMENTS_PY,
        old="        if error.code == MTURK_REFUSED_REQUEST:",
        new="        if False:",
        tests=[MACHINE],
        behaviour="52.1: a bonus MTurk refuses is not set aside but tried again on every press",
    ),
    Mutant(
        path=PAYMENTS_PY,
        old="    BonusPayment.objects.filter(earned_id__in=earned_ids).delete()",
        new="    pass",
        tests=[MACHINE],
        behaviour="52.1: 'paid' is stored twice again (a payment row outlives its ledger row)",
    ),
    Mutant(
        path=REVIEWS_PY,
        old="        if review.attempts:",
        new="        if False:",
        tests=[MACHINE],
        behaviour="52.1: a queued rejection whose answer was lost is sent twice",
    ),
    Mutant(
        path=REVIEWS_PY,
        old="    outcome.add(retry_queued_rejections(connection))",
        new="    pass",
        tests=[MACHINE],
        behaviour="52.1: a rejection not sent for a network failure is never sent again",
    ),
]
