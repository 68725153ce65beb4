from django.conf import settings
from django.core.wsgi import get_wsgi_application

from storage_service.serving import RequestTimeout, WithoutServerEnvironment
from storage_service.settings.profile import require_profile

# No default profile: a server started without DJANGO_SETTINGS_MODULE refuses to start.
require_profile()

application = RequestTimeout(
    WithoutServerEnvironment(get_wsgi_application()), settings.API_TIMEOUT_SECONDS
)
