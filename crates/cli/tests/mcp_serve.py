"""Lists and calls `wayline mcp serve` (stdio) with the official Python MCP SDK: runs the
workflow named by WORKFLOW with INPUTS (JSON), collecting progress notifications. Arguments:
the command and its arguments, or the URL it serves at (streamable HTTP, the token in
WAYLINE_MCP_TOKEN); MODE is the protocol: `legacy` (the initialize handshake,
2025-11-25) or a revision without one (`2026-07-28`). With GIVE_UP_AFTER (seconds) the client
stops waiting for the workflow then, as the SDK does on a timeout: it sends
`notifications/cancelled`. Prints JSON."""

import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


def server_of(argv):
    """A URL (the token in WAYLINE_MCP_TOKEN), or a command line started on stdio."""
    if argv[0].startswith("http://"):
        token = os.environ["WAYLINE_MCP_TOKEN"]
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        return streamable_http_client(argv[0], http_client=http)
    return StdioServerParameters(command=argv[0], args=argv[1:])


async def main():
    params = server_of(sys.argv[1:])
    progress = []

    async def on_progress(done, total, message):
        progress.append({"done": done, "total": total, "message": message})

    report = {}
    async with Client(params, mode=os.environ.get("MODE", "legacy"), cache=None) as client:
        report["protocol"] = client.protocol_version
        tools = await client.list_tools()
        report["tools"] = {tool.name: tool.input_schema for tool in tools.tools}
        give_up = os.environ.get("GIVE_UP_AFTER")
        try:
            result = await client.call_tool(
                os.environ["WORKFLOW"],
                json.loads(os.environ["INPUTS"]),
                read_timeout_seconds=float(give_up) if give_up else None,
                progress_callback=on_progress,
            )
        except Exception as error:  # the SDK's timeout, after it sent the cancellation
            if not give_up:
                raise
            report["gave_up"] = type(error).__name__
            result = None
            # The server records the cancelled run as soon as the cancellation arrives; give
            # it a moment before the next call, so that it is on record before the server
            # exits when this client leaves.
            await asyncio.sleep(0.5)
        if result is not None:
            report["is_error"] = bool(result.is_error)
            report["structured"] = result.structured_content
            report["text"] = [item.text for item in result.content if item.type == "text"]
        if "ALSO" in os.environ:
            name, arguments = json.loads(os.environ["ALSO"])
            also = await client.call_tool(name, arguments)
            report["also"] = also.structured_content
    report["progress"] = progress
    print(json.dumps(report))


asyncio.run(main())
