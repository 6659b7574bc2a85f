from django.urls import path

from . import research_views, views

app_name = "adversarial"
urlpatterns = [
    path("next/", views.adversarial_next, name="next"),
    path("<uuid:token>/", views.adversarial_task, name="task"),
    path("<uuid:token>/try/", views.adversarial_try, name="try"),
    path("<uuid:token>/reason/", views.adversarial_reason, name="reason"),
    path("rounds/", research_views.rounds_index, name="rounds_index"),
    path("rounds/<slug:slug>/", research_views.study_rounds, name="rounds"),
    path("rounds/<slug:slug>/advance/", research_views.advance, name="advance"),
    path("rounds/<slug:slug>/<int:number>/close/", research_views.close, name="close"),
    path("rounds/<slug:slug>/<int:number>/export.jsonl", research_views.export, name="export"),
]
