"""Date formats of the operator console (FORMAT_MODULE_PATH): one way of writing a date and a time
everywhere in it, the ISO order the API and the logs use."""
