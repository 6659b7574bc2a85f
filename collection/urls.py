from django.urls import include, path

from . import views

# No app namespace: Django's auth views ("login", "logout") and "home" are referred to by plain name.
urlpatterns = [
    path("", views.home, name="home"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("study/<slug:slug>/", views.study_entry, name="study_entry"),
    path("write/next/", views.writing_next, name="writing_next"),
    path("write/<uuid:token>/", views.writing_task, name="writing_task"),
    path("faq/<slug:slug>/", views.faq, name="faq"),
]
