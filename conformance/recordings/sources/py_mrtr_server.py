#!/usr/bin/env python3
"""py_mrtr_server.py — the server of the `pyfixture-mrtr-*` recordings: an MCPServer of the Python
SDK (mcp 2.3.0) whose tools need input from the client, so that a 2026-07-28 session shows
multi-round-trip requests (InputRequiredResult, inputResponses, requestState), and whose resource
changes reach a `subscriptions/listen` stream.

    $MCP_PYTHON py_mrtr_server.py                 # stdio
    $MCP_PYTHON py_mrtr_server.py --http PORT     # Streamable HTTP at http://127.0.0.1:PORT/mcp

Tools:
- greet: elicits a name (one round), answers "Hello, NAME!".
- summarize {text}: samples the client's model (one round), answers with the sampled text.
- where: asks for the client's roots (one round), answers with their URIs.
- plan_trip: elicits a destination and lists roots in the same round, then elicits a
  confirmation that names the destination (a second round).
- touch {uri}: sends notifications/resources/updated for uri (to listeners) and answers "touched".
Resource: fixture://note (text "a note").
Not published anywhere: the recordings' README says how they were made.
"""

import sys
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, ListRoots, Resolve, Sample
from mcp_types import CreateMessageResult, ListRootsResult, SamplingMessage, TextContent
from pydantic import BaseModel


class Name(BaseModel):
    name: str


class Destination(BaseModel):
    city: str


class Confirmation(BaseModel):
    confirm: bool


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def ask_summary(text: str) -> Sample:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=f"Summarize: {text}"))
    return Sample([message], max_tokens=40)


def ask_roots() -> ListRoots:
    return ListRoots()


def ask_destination() -> Elicit[Destination]:
    return Elicit("Where to?", Destination)


def ask_confirmation(destination: Annotated[Destination, Resolve(ask_destination)]) -> Elicit[Confirmation]:
    return Elicit(f"Book the trip to {destination.city}?", Confirmation)


server = MCPServer("py-mrtr-fixture", version="1.0.0", instructions="A fixture whose tools ask the client first.")


@server.tool()
def greet(name: Annotated[Name, Resolve(ask_name)]) -> str:
    """Greets whoever the client says it is."""
    return f"Hello, {name.name}!"


@server.tool()
def summarize(text: str, summary: Annotated[CreateMessageResult, Resolve(ask_summary)]) -> str:
    """Summarizes a text with the client's model."""
    content = summary.content
    return content.text if isinstance(content, TextContent) else "(no text)"


@server.tool()
def where(roots: Annotated[ListRootsResult, Resolve(ask_roots)]) -> str:
    """Lists the client's roots."""
    return ", ".join(str(root.uri) for root in roots.roots)


@server.tool()
def plan_trip(
    destination: Annotated[Destination, Resolve(ask_destination)],
    roots: Annotated[ListRootsResult, Resolve(ask_roots)],
    confirmation: Annotated[Confirmation, Resolve(ask_confirmation)],
) -> str:
    """Plans a trip: a destination and the roots in one round, then a confirmation."""
    verdict = "booked" if confirmation.confirm else "not booked"
    return f"{destination.city}: {verdict}, files under {len(roots.roots)} root(s)"


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Tells listeners that a resource changed."""
    await ctx.notify_resource_updated(uri)
    return "touched"


@server.resource("fixture://note")
def note() -> str:
    return "a note"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif len(sys.argv) == 1:
        server.run("stdio")
    else:
        sys.exit("usage: py_mrtr_server.py [--http PORT]")
