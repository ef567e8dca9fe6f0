"""Lists and calls `wayline mcp serve` (stdio) with the official Python MCP SDK: runs the
workflow named by WORKFLOW with INPUTS (JSON), collecting progress notifications. Arguments:
the command and its arguments, or the URL it serves at (streamable HTTP, the token in
WAYLINE_MCP_TOKEN); MODE is the protocol: `legacy` (the initialize handshake,
2025-11-25) or a revision without one (`2026-07-28`). Prints JSON."""

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
        result = await client.call_tool(
            os.environ["WORKFLOW"],
            json.loads(os.environ["INPUTS"]),
            progress_callback=on_progress,
        )
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
