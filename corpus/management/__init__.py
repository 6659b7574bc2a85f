"""Shared by the data commands of every app."""

from django.core.checks import Tags

# The system checks a data command (import, recompute, statistics, splits) runs before it starts:
# the models' only. The URL and template checks import every view (and what the views import)
# and check templates, seconds spent on nothing the command touches; `manage.py check` and the
# server still run them all.
DATA_COMMAND_CHECKS = [Tags.models]
