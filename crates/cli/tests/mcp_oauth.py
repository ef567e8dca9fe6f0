"""Talks to a wayline MCP server that takes OAuth tokens (`--oauth-issuer`) as clients would.

First by hand, as the MCP authorization specification's discovery begins: a request without a
token (its status and `WWW-Authenticate` challenge), the resource metadata that challenge
names, and a request with each token in PROBES (JSON list). Then, unless SDK is `0`, with the
official Python SDK's client-credentials provider: it reads the challenge and metadata
itself, gets a token from the authorization server for this resource, lists the tools and
calls TOOL with ARGUMENTS (JSON).

Argument: the server's URL. Environment: ISSUER, CLIENT_ID, CLIENT_SECRET, MODE (`legacy` or
`2026-07-28`). Prints JSON.
"""

import asyncio
import json
import os
import re
import sys
import urllib.error
import urllib.request

from mcp import Client
from mcp.client.auth import TokenStorage
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}


def post(url, token):
    """The status and challenge a POST of an initialize request is answered with."""
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        url, data=json.dumps(INITIALIZE).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return {"status": response.status, "challenge": None}
    except urllib.error.HTTPError as error:
        return {"status": error.code, "challenge": error.headers.get("WWW-Authenticate")}


class Memory(TokenStorage):
    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


async def with_sdk(url, report):
    provider = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=Memory(),
        client_id=os.environ["CLIENT_ID"],
        client_secret=os.environ["CLIENT_SECRET"],
        issuer=os.environ["ISSUER"],
    )
    http = create_mcp_http_client(auth=provider)
    params = streamable_http_client(url, http_client=http)
    async with Client(params, mode=os.environ.get("MODE", "legacy"), cache=None) as client:
        report["protocol"] = client.protocol_version
        tools = await client.list_tools()
        report["tools"] = sorted(tool.name for tool in tools.tools)
        result = await client.call_tool(os.environ["TOOL"], json.loads(os.environ["ARGUMENTS"]))
        report["is_error"] = bool(result.is_error)
        report["text"] = [item.text for item in result.content if item.type == "text"]
        again = await client.call_tool(os.environ["TOOL"], json.loads(os.environ["ARGUMENTS"]))
        report["again"] = [item.text for item in again.content if item.type == "text"]


def main():
    url = sys.argv[1]
    report = {"without_token": post(url, None)}
    named = re.search(r'resource_metadata="([^"]+)"', report["without_token"]["challenge"] or "")
    if named:
        with urllib.request.urlopen(named.group(1), timeout=30) as response:
            report["metadata"] = json.load(response)
    report["probes"] = {
        token: post(url, token) for token in json.loads(os.environ.get("PROBES", "[]"))
    }
    if os.environ.get("SDK") != "0":
        asyncio.run(with_sdk(url, report))
    print(json.dumps(report))


main()
