"""What the accounts layer tells the layers above it (they connect; accounts imports none of
them)."""

from django.dispatch import Signal

# An API key was used and its last use is due to be noted (once per
# accounts.authentication.TOUCH_SECONDS a process): key_id, at (an aware datetime). memoryhub writes
# these in batches, off the request (memoryhub.api.middleware.key_uses).
key_used = Signal()
