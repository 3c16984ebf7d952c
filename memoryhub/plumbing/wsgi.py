import os

from django.core.wsgi import get_wsgi_application

from memoryhub.plumbing.embedded_pg import ensure_running

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
ensure_running()
application = get_wsgi_application()
