from django.urls import path

from .views import (
    aggregation,
    artifacts,
    collection,
    corpus,
    mpe,
    pairs,
    quality,
    recast,
    snapshots,
    training,
    validation,
    workers,
)

app_name = "dashboard"
urlpatterns = [
    path("", collection.collection, name="collection"),
    path("validation/", validation.validation, name="validation"),
    path("corpus/", corpus.corpus, name="corpus"),
    path("workers/", workers.workers, name="workers"),
    path("workers/exclusion/", quality.worker_exclusion, name="worker_exclusion"),
    path("label/", quality.label_pairs, name="label_pairs"),
    path("bonuses/", quality.bonus_page, name="bonuses"),
    path("bonuses/<slug:slug>/pay/", quality.bonus_pay, name="bonus_pay"),
    path("bonuses/<slug:slug>/<str:market>.csv", quality.bonus_export, name="bonus_export"),
    path("pairs/", pairs.pairs, name="pairs"),
    path("reports/", pairs.reports, name="reports"),
    path("reports/<int:premise_id>/", pairs.report_action, name="report_action"),
    path("snapshots/", snapshots.snapshots, name="snapshots"),
    path("snapshots/progress.json", snapshots.snapshots_progress, name="snapshots_progress"),
    path("training/", training.training, name="training"),
    path("training/progress.json", training.training_progress, name="training_progress"),
    path("training/<int:run_id>/", training.training_detail, name="training_detail"),
    path("artifacts/", artifacts.artifacts, name="artifacts"),
    path("aggregation/", aggregation.aggregation, name="aggregation"),
    path("aggregation/progress.json", aggregation.aggregation_progress, name="aggregation_progress"),
    path("aggregation/<int:run_id>/", aggregation.aggregation_detail, name="aggregation_detail"),
    path("mpe/", mpe.mpe, name="mpe"),
    path("mpe/adjudicate/<int:pair_id>/", mpe.adjudicate_item, name="mpe_adjudicate"),
    path("recast/", recast.recast, name="recast"),
]
