"""Drives an MCP server (`wayline mcp gateway` in front of server-everything) with the official
Python MCP SDK through everything a client uses, on the protocol revision MODE names: `legacy`
(the initialize handshake) or `2026-07-28` (none; each request carries its own metadata).

Arguments: `stdio COMMAND ARG...` or `http URL` (the token in WAYLINE_MCP_TOKEN); PREFIX is
the gateway's tool prefix (`everything__` or empty). Prints what it saw as one JSON document.
"""

import asyncio
import json
import os
import sys

from mcp import Client, StdioServerParameters, types
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


async def sample(context, params):
    """The client's model, as far as the test goes: it answers every sampling request."""
    asked = params.messages[0].content.text
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=f"sampled: {asked}"),
        model="fake-model",
    )


def server_of(argv):
    if argv[0] == "stdio":
        return StdioServerParameters(command=argv[1], args=argv[2:])
    token = os.environ["WAYLINE_MCP_TOKEN"]
    http = create_mcp_http_client(headers={"Authorization": f"bearer {token}"})
    return streamable_http_client(argv[1], http_client=http)


async def main():
    mode = os.environ.get("MODE", "legacy")
    prefix = os.environ.get("PREFIX", "")
    report = {}
    logs = []

    async def on_log(params):
        logs.append(params.level)

    # On 2026-07-28 a request opts in to log messages in its `_meta` (log_level); before, the
    # client sets the level once (logging/setLevel, which the gateway passes on).
    opt_in = {} if mode == "legacy" else {"log_level": "debug"}
    async with Client(
        server_of(sys.argv[1:]),
        mode=mode,
        sampling_callback=sample,
        logging_callback=on_log,
        cache=None,
        **opt_in,
    ) as client:
        report["protocol"] = client.protocol_version
        tools = await client.list_tools()
        report["tools"] = sorted(tool.name for tool in tools.tools)
        echo = await client.call_tool(f"{prefix}echo", {"message": "hello"})
        report["echo"] = [item.text for item in echo.content if item.type == "text"]
        if mode == "legacy":
            await client.set_logging_level("debug")
        # The upstream sends a log message at once, then one every 5 s.
        await client.call_tool(f"{prefix}toggle-simulated-logging", {})

        resources = await client.list_resources()
        report["resources"] = len(resources.resources)
        read = await client.read_resource(resources.resources[0].uri)
        report["resource_text"] = getattr(read.contents[0], "text", "")[:20]
        templates = await client.list_resource_templates()
        report["templates"] = sorted(t.uri_template for t in templates.resource_templates)

        prompts = await client.list_prompts()
        report["prompts"] = sorted(prompt.name for prompt in prompts.prompts)
        prompt = await client.get_prompt(f"{prefix}args-prompt", {"city": "Lisbon"})
        report["prompt"] = [message.content.text for message in prompt.messages]
        completion = await client.complete(
            types.PromptReference(type="ref/prompt", name=f"{prefix}completable-prompt"),
            {"name": "department", "value": "Eng"},
        )
        report["completion"] = completion.completion.values

        progress = []

        async def on_progress(done, total, message):
            progress.append(done)

        slow = await client.call_tool(
            f"{prefix}trigger-long-running-operation",
            {"duration": 1, "steps": 3},
            progress_callback=on_progress,
        )
        # The callback ran before call_tool returned: every notification came before the result.
        report["progress_before_result"] = list(progress)
        report["slow"] = [item.text for item in slow.content if item.type == "text"]

        sampled = await client.call_tool(
            f"{prefix}trigger-sampling-request", {"prompt": "what is wrong?", "maxTokens": 20}
        )
        report["sampled"] = " ".join(item.text for item in sampled.content if item.type == "text")
        report["sampled_error"] = bool(sampled.is_error)

        # A retry naming a requestState the gateway did not hand out is refused, not forwarded.
        if mode != "legacy":
            try:
                forged = await client.call_tool(
                    f"{prefix}echo", {"message": "x"}, request_state="0" * 32, input_responses={}
                )
                report["forged_state"] = "answered: " + str(forged.is_error)
            except Exception as error:  # the SDK raises the JSON-RPC error
                report["forged_state"] = str(error)

        # The guard session this client works in, and the evidence its calls left there.
        state = await client.call_tool("workflow_state", {})
        report["session"] = state.structured_content["session"]
        report["evidence"] = len(state.structured_content["evidence"])
    report["logs"] = len(logs)
    print(json.dumps(report))


asyncio.run(main())
