"""The ASGI application `manage.py run` serves (uvicorn workers under gunicorn), behind the body
limits and deadlines of memoryhub.asgi_body."""

import os

from django.core.asgi import get_asgi_application

from memoryhub.asgi_body import BodyLimits
from memoryhub.embedded_pg import ensure_running

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
ensure_running()
application = BodyLimits(get_asgi_application())
