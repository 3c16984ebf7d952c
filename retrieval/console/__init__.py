"""The operator console's pages that need retrieval (inside the Django admin): the memory explorer
with the real hybrid search, the context preview, consolidation previews and per-memory reviews.

Each view is wrapped by `admin.site.admin_view` (staff only) and renders in the admin's frame;
routes are in urls.py, included under /admin/console/ by memoryhub.urls. Views parse a form, call
the same domain functions the API calls (retrieval.scoping, retrieval.search, retrieval.context,
retrieval.lifecycle) and render their results as text, never as ids alone.
"""
