from django.urls import path

from . import views

app_name = "consent"
urlpatterns = [
    path("study/<slug:slug>/consent/", views.sheet, name="sheet"),
    path("study/<slug:slug>/no-consent/", views.declined, name="declined"),
    path("withdraw/", views.withdraw, name="withdraw"),
]
