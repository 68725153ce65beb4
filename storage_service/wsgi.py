from django.conf import settings
from django.core.wsgi import get_wsgi_application

from storage_service.serving import ChunkedBody, RequestTimeout, WithoutServerEnvironment
from storage_service.settings.profile import require_profile

# No default profile: a server started without DJANGO_SETTINGS_MODULE refuses to start.
require_profile()

application = RequestTimeout(
    WithoutServerEnvironment(
        ChunkedBody(get_wsgi_application(), settings.SERVICE_MAX_REQUEST_BODY_BYTES)
    ),
    settings.API_TIMEOUT_SECONDS,
)
