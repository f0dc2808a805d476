"""py_mrtr_server.py: a Python SDK (mcp 2.3) MCPServer whose tools need client input.

    $MCP_PYTHON py_mrtr_server.py              # stdio
    $MCP_PYTHON py_mrtr_server.py --http PORT  # Streamable HTTP at http://127.0.0.1:PORT/mcp
"""
from typing import Annotated

from mcp.server.mcpserver import Elicit, ListRoots, MCPServer, Resolve
from mcp_types import ListRootsResult
from pydantic import BaseModel


class Name(BaseModel):
    name: str


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def get_roots() -> ListRoots:
    return ListRoots()


server = MCPServer("py-mrtr")


@server.tool()
def greet(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greets whoever the user says they are."""
    return f"hello {who.name}"


@server.tool()
def roots(found: Annotated[ListRootsResult, Resolve(get_roots)]) -> str:
    """Lists the client's roots."""
    return ",".join(str(root.uri) for root in found.roots)


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        # Streamable HTTP on 127.0.0.1:PORT/mcp (the SDK's default path).
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
