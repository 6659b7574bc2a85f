"""Reviews and market connections are in the audit log: who approved or rejected
which session, and who changed a study's connection."""

import pytest

from audit.models import AuditEntry
from markets import connections, reviews

from .conftest import arrive, connect_prolific, make_study

pytestmark = pytest.mark.django_db


def test_approvals_rejections_and_connections_are_recorded(standin, django_user_model, researcher):
    study = make_study()
    connections.save_connection(
        study, market="prolific", market_study_id=standin.study_id, token=standin.prolific_token, by=researcher
    )
    (saved,) = AuditEntry.objects.filter(action="market.connection_saved")
    assert saved.actor == researcher.username and saved.after["market_study_id"] == standin.study_id
    connect_prolific(study, standin)
    first, second = arrive(study, standin, django_user_model, 2)
    reviews.approve_sessions(study, [first.pk], by=researcher)
    reviews.reject_session(second, "No answers given.", by=researcher)
    approved = AuditEntry.objects.get(action="review.approve")
    rejected = AuditEntry.objects.get(action="review.reject")
    assert approved.subject_id == str(first.pk) and approved.actor == researcher.username
    assert rejected.reason == "No answers given." and rejected.team_id == study.team_id
