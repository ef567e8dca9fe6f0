"""Calls `wayline mcp gateway --http` with the official Python MCP SDK's streamable HTTP client:
lists the tools and calls `echo`, `get-env` and `workflow_state` with the bearer token, then
tries without it, from a web page's origin and through a host name the gateway does not answer
to. Arguments: the gateway's URL; the token is in WAYLINE_MCP_TOKEN. Prints JSON."""

import asyncio
import json
import os
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


async def main():
    url = sys.argv[1]
    token = os.environ["WAYLINE_MCP_TOKEN"]
    report = {}
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client:
        async with streamable_http_client(url, http_client=client) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                report["tools"] = sorted(tool.name for tool in tools.tools)
                echo = await session.call_tool("everything__echo", {"message": "over http"})
                report["echo"] = [item.text for item in echo.content]
                env = await session.call_tool("everything__get-env", {})
                report["env"] = " ".join(getattr(item, "text", "") for item in env.content)
                state = await session.call_tool("workflow_state", {})
                report["state"] = state.structured_content["state"]
                blocked = await session.call_tool("everything__toggle-simulated-logging", {})
                report["blocked"] = bool(blocked.is_error)
                resources = await session.list_resources()
                report["resources"] = [str(resource.uri) for resource in resources.resources]
                read_back = await session.read_resource(resources.resources[0].uri)
                report["resource_text"] = read_back.contents[0].text[:40]
                prompts = await session.list_prompts()
                report["prompts"] = [prompt.name for prompt in prompts.prompts]
                prompt = await session.get_prompt("everything__args-prompt", {"city": "Lisbon"})
                report["prompt"] = [message.content.text for message in prompt.messages]
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with httpx2.AsyncClient() as plain:
        response = await plain.post(url, json=ping)
        report["without_token"] = response.status_code
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
        }
        from_a_page = await plain.post(
            url, json=ping, headers={**headers, "Origin": "https://evil.example"}
        )
        report["from_a_page"] = from_a_page.status_code
        rebound = await plain.post(url, json=ping, headers={**headers, "Host": "attacker.example"})
        report["rebound_host"] = rebound.status_code
    print(json.dumps(report))


asyncio.run(main())
