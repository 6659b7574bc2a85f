from django.urls import path

from . import views

app_name = "markets"
urlpatterns = [path("prolific/<str:key>/", views.prolific_webhook, name="prolific_webhook")]
