"""Lists and calls `wayline mcp serve` (stdio) with the official Python MCP SDK: runs the
workflow named by WORKFLOW with INPUTS (JSON), collecting progress notifications. Arguments:
the command and its arguments. Prints JSON."""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main():
    params = StdioServerParameters(command=sys.argv[1], args=sys.argv[2:])
    progress = []

    async def on_progress(done, total, message):
        progress.append({"done": done, "total": total, "message": message})

    report = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            report["tools"] = {tool.name: tool.input_schema for tool in tools.tools}
            result = await session.call_tool(
                os.environ["WORKFLOW"],
                json.loads(os.environ["INPUTS"]),
                progress_callback=on_progress,
            )
            report["is_error"] = bool(result.is_error)
            report["structured"] = result.structured_content
            report["text"] = [item.text for item in result.content if item.type == "text"]
            if "ALSO" in os.environ:
                name, arguments = json.loads(os.environ["ALSO"])
                also = await session.call_tool(name, arguments)
                report["also"] = also.structured_content
    report["progress"] = progress
    print(json.dumps(report))


asyncio.run(main())
