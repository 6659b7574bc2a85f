from django.urls import path

from . import views

# No app namespace: "home" is referred to by plain name (LOGIN_REDIRECT_URL, templates).
urlpatterns = [
    path("", views.home, name="home"),
    path("study/<slug:slug>/", views.study_entry, name="study_entry"),
    path("study/<slug:slug>/preview/", views.preview_start, name="study_preview_start"),
    path("preview/end/", views.preview_end, name="preview_end"),
]
