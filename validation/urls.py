from django.urls import path

from . import views

app_name = "validation"
urlpatterns = [
    path("next/", views.next_batch, name="next"),
    path("batch/<uuid:batch>/", views.batch, name="batch"),
    path("faq/", views.faq, name="faq"),
    path("grammaticality/", views.grammaticality, name="grammaticality"),
]
