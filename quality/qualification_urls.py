from django.urls import path

from . import qualification_views

# No namespace: crowd's admission check sends workers to "qualification" by name.
urlpatterns = [
    path("qualify/<slug:slug>/", qualification_views.qualification_page, name="qualification"),
]
