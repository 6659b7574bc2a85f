"""Reads of the adversarial rounds pages: the studies, a study's rounds and their figures
(`adversarial.selectors`), the datasets a next round may collect into."""

from django.shortcuts import get_object_or_404

from adversarial import selectors
from adversarial.models import Round, RoundStatus
from corpus.models import Dataset
from crowd.models import Study, TaskKind


def adversarial_studies():
    return list(Study.objects.filter(task_kind=TaskKind.ADVERSARIAL).order_by("slug"))


def adversarial_study(slug):
    return get_object_or_404(Study, slug=slug, task_kind=TaskKind.ADVERSARIAL)


def study_rounds(study):
    return selectors.study_rounds(study)


def collected_datasets():
    return list(Dataset.objects.filter(is_imported=False).order_by("slug"))


def dataset_named(slug):
    return Dataset.objects.filter(slug=slug).first()


def round_of(slug, number):
    return get_object_or_404(Round, study__slug=slug, number=number)


def closing_rounds(slug):
    return list(Round.objects.filter(study__slug=slug, status=RoundStatus.CLOSING))
