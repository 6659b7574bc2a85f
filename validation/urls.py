from django.urls import path

from . import mpe_views, premise_label_views, views

app_name = "validation"
urlpatterns = [
    path("next/", views.next_batch, name="next"),
    path("batch/<uuid:batch>/", views.batch, name="batch"),
    path("batch/<uuid:batch>/renew/", views.renew, name="batch-renew"),
    path("faq/", views.faq, name="faq"),
    path("mpe/next/", mpe_views.next_batch, name="mpe-next"),
    path("mpe/batch/<uuid:batch>/", mpe_views.batch, name="mpe-batch"),
    path("mpe/batch/<uuid:batch>/renew/", mpe_views.renew, name="mpe-batch-renew"),
    path("premises/next/", premise_label_views.next_batch, name="premise-next"),
    path("premises/batch/<uuid:batch>/", premise_label_views.batch, name="premise-batch"),
    path("premises/batch/<uuid:batch>/renew/", premise_label_views.renew, name="premise-batch-renew"),
    path("grammaticality/", views.grammaticality, name="grammaticality"),
    path("grammaticality/<uuid:batch>/renew/", views.grammaticality_renew, name="grammaticality-renew"),
]
