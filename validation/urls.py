from django.urls import path

app_name = "validation"
urlpatterns = []
