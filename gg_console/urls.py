from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from surfaces import views as surfaces_views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("reference/", include("surfaces.urls")),
    path("glossary/", surfaces_views.glossary, name="glossary"),
    path("", include("runs.urls")),
]

handler400 = "gg_console.errors.bad_request"
handler403 = "gg_console.errors.permission_denied"
handler404 = "gg_console.errors.not_found"
handler500 = "gg_console.errors.server_error"
