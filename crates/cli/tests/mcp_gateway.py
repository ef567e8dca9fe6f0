"""Drives `wayline mcp gateway` (stdio) in front of server-everything with the official Python
MCP SDK, the way an agent would, and prints what it saw as one JSON document.

Arguments: the wayline binary, then the gateway's arguments. The environment gives
APPROVE_ARGS (the `wayline guard approve` arguments, as JSON) for the break-glass step.
"""

import asyncio
import json
import os
import subprocess
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def text_of(result):
    return "\n".join(item.text for item in result.content if getattr(item, "type", "") == "text")


def seen(result):
    return {
        "is_error": bool(result.is_error),
        "text": text_of(result),
        "structured": result.structured_content,
    }


async def main():
    wayline, gateway_args = sys.argv[1], sys.argv[2:]
    scenario = os.environ.get("SCENARIO", "first")
    params = StdioServerParameters(command=wayline, args=gateway_args)
    report = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            report["tools"] = sorted(tool.name for tool in tools.tools)
            if scenario == "restart":
                report["state"] = seen(await session.call_tool("workflow_state", {}))
                report["write"] = seen(await session.call_tool("toggle-simulated-logging", {}))
                print(json.dumps(report))
                return
            report["write_blocked"] = seen(await session.call_tool("toggle-simulated-logging", {}))
            report["read"] = seen(await session.call_tool("echo", {"message": "hi"}))
            report["state_before"] = seen(await session.call_tool("workflow_state", {}))
            report["advance_refused"] = seen(
                await session.call_tool("workflow_advance", {"to": "resolving"})
            )
            asked = await session.call_tool(
                "break_glass_request",
                {
                    "reason": "logging must be switched on to see the failure",
                    "tools": ["toggle-simulated-logging"],
                    "minutes": 5,
                    "calls": 1,
                },
            )
            report["asked"] = seen(asked)
            report["before_approval"] = seen(
                await session.call_tool("toggle-simulated-logging", {})
            )
            request = asked.structured_content["request"]
            approve = json.loads(os.environ["APPROVE_ARGS"])
            approved = subprocess.run(
                [wayline, "guard", "approve", request, *approve],
                capture_output=True,
                text=True,
            )
            report["approval"] = {
                "code": approved.returncode,
                "stdout": approved.stdout,
                "stderr": approved.stderr,
            }
            report["under_grant"] = seen(await session.call_tool("toggle-simulated-logging", {}))
            report["used_up"] = seen(await session.call_tool("toggle-simulated-logging", {}))
            report["evidence"] = seen(
                await session.call_tool("get-structured-content", {"location": "Chicago"})
            )
            report["state_after"] = seen(await session.call_tool("workflow_state", {}))
            report["write_in_resolving"] = seen(
                await session.call_tool("toggle-simulated-logging", {})
            )
    print(json.dumps(report))


asyncio.run(main())
