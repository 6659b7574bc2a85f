"""Pay a study's owed bonuses on its market, as the dashboard's button does (settling first what
earlier attempts left unsure): `manage.py pay_market_bonuses STUDY_SLUG`."""

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from crowd.models import Study
from markets import connections, payments
from markets.clients import MarketError
from markets.sealing import SealingUnavailable


class Command(BaseCommand):
    help = "Pay a study's owed bonuses on its market (Prolific or MTurk), once each."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("study", help="The study's slug.")

    def handle(self, *args: Any, **options: Any) -> None:
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"No study {options['study']!r}.")
        try:
            outcome = payments.pay_owed_bonuses(study)
        except (MarketError, SealingUnavailable, connections.ConnectionRefused) as error:
            raise CommandError(str(error)) from error
        self.stdout.write(outcome.line(study.bonus_currency))
