"""The old name of `create_node_token`, kept so that scripts written before the rename still work."""

from .create_node_token import Command as NodeTokenCommand


class Command(NodeTokenCommand):
    help = "Old name of create_node_token: " + NodeTokenCommand.help
