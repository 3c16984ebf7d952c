"""The REST API of the core domain: serializers and views per area, the error envelope, the URL
table."""
