from django.urls import path

from surfaces import views

app_name = "surfaces"
urlpatterns = [
    path("", views.reference, name="reference"),
]
