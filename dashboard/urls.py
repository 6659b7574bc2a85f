from django.urls import path

from .views import artifacts, collection, corpus, pairs, recast, snapshots, training, validation, workers

app_name = "dashboard"
urlpatterns = [
    path("", collection.collection, name="collection"),
    path("validation/", validation.validation, name="validation"),
    path("corpus/", corpus.corpus, name="corpus"),
    path("workers/", workers.workers, name="workers"),
    path("pairs/", pairs.pairs, name="pairs"),
    path("reports/", pairs.reports, name="reports"),
    path("reports/<int:premise_id>/", pairs.report_action, name="report_action"),
    path("snapshots/", snapshots.snapshots, name="snapshots"),
    path("snapshots/progress.json", snapshots.snapshots_progress, name="snapshots_progress"),
    path("training/", training.training, name="training"),
    path("training/progress.json", training.training_progress, name="training_progress"),
    path("training/<int:run_id>/", training.training_detail, name="training_detail"),
    path("artifacts/", artifacts.artifacts, name="artifacts"),
    path("recast/", recast.recast, name="recast"),
]
