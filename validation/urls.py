from django.urls import path

from . import mpe_views, premise_label_views, views

app_name = "validation"
urlpatterns = [
    path("next/", views.next_batch, name="next"),
    path("batch/<uuid:batch>/", views.batch, name="batch"),
    path("faq/", views.faq, name="faq"),
    path("mpe/next/", mpe_views.next_batch, name="mpe-next"),
    path("mpe/batch/<uuid:batch>/", mpe_views.batch, name="mpe-batch"),
    path("premises/next/", premise_label_views.next_batch, name="premise-next"),
    path("premises/batch/<uuid:batch>/", premise_label_views.batch, name="premise-batch"),
    path("grammaticality/", views.grammaticality, name="grammaticality"),
]
