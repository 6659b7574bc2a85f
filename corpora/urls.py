from django.urls import path

app_name = "corpora"
urlpatterns = []
