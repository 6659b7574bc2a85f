from django.http import HttpResponseForbidden

from .permissions import is_researcher


class ResearcherOnlyAdminMiddleware:
    """Crowdworkers who are logged in never see the admin, not even its login page."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/admin/") and request.user.is_authenticated and not is_researcher(request.user):
            return HttpResponseForbidden("This area is for researchers.")
        return self.get_response(request)
