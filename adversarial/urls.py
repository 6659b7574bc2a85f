from django.urls import path

from . import views

app_name = "adversarial"
urlpatterns = [
    path("next/", views.adversarial_next, name="next"),
    path("<uuid:token>/", views.adversarial_task, name="task"),
    path("<uuid:token>/try/", views.adversarial_try, name="try"),
    path("<uuid:token>/renew/", views.adversarial_renew, name="renew"),
    path("<uuid:token>/reason/", views.adversarial_reason, name="reason"),
    # The researcher pages of the rounds are the dashboard's (dashboard/views/adversarial.py).
]
