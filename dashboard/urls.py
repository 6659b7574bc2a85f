from django.urls import path

app_name = "dashboard"
urlpatterns = []
