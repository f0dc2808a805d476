"""py_mrtr_server.py: a Python SDK (mcp 2.3) MCPServer whose tools need client input, and
one (grow) that changes the tool list, which 2026-07-28 clients hear on `subscriptions/listen`.

    $MCP_PYTHON py_mrtr_server.py              # stdio
    $MCP_PYTHON py_mrtr_server.py --http PORT  # Streamable HTTP at http://127.0.0.1:PORT/mcp
"""
from typing import Annotated

from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve
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


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Adds a tool called NAME and tells listeners the tool list changed."""

    def grown() -> str:
        return f"{name} was grown"

    server.add_tool(grown, name=name, description="added by grow")
    await ctx.notify_tools_changed()
    return f"added {name}"


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        # Streamable HTTP on 127.0.0.1:PORT/mcp (the SDK's default path).
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
