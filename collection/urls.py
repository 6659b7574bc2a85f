from django.urls import path

from . import views

# No app namespace: "writing_next" and "writing_task" are referred to by plain name.
urlpatterns = [
    path("write/next/", views.writing_next, name="writing_next"),
    path("write/<uuid:token>/", views.writing_task, name="writing_task"),
    path("write/<uuid:token>/resubmit/", views.writing_resubmit, name="writing_resubmit"),
    path("write/<uuid:token>/renew/", views.writing_renew, name="writing_renew"),
    path("faq/<slug:slug>/", views.faq, name="faq"),
]
