// What tests/mcp_oauth.py does with the Python SDK's provider, with the official TypeScript
// SDK's client (v2) and its `ClientCredentialsProvider`: the transport meets the 401, reads
// the resource metadata it names, gets a token from the authorization server for this
// resource, then lists the tools and calls TOOL with ARGUMENTS (JSON) twice.
//
// Argument: the server's URL. Environment: ISSUER, CLIENT_ID, CLIENT_SECRET, MODE (`legacy`
// or `2026-07-28`), MCP_TS_CLIENT (the @modelcontextprotocol/client package). Prints JSON.

import { join } from "node:path";
import { pathToFileURL } from "node:url";

const sdk = process.env.MCP_TS_CLIENT;
const { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } = await import(
  pathToFileURL(join(sdk, "dist/index.mjs")).href
);

const mode = process.env.MODE ?? "legacy";
const authProvider = new ClientCredentialsProvider({
  clientId: process.env.CLIENT_ID,
  clientSecret: process.env.CLIENT_SECRET,
  expectedIssuer: process.env.ISSUER,
});
const transport = new StreamableHTTPClientTransport(new URL(process.argv[2]), { authProvider });
const client = new Client(
  { name: "wayline-oauth-ts", version: "1" },
  { versionNegotiation: { mode: mode === "legacy" ? "legacy" : { pin: mode } } },
);
await client.connect(transport);

const texts = (result) =>
  result.content.filter((item) => item.type === "text").map((item) => item.text);
const report = { protocol: client.getNegotiatedProtocolVersion() ?? null };
const tools = await client.listTools();
report.tools = tools.tools.map((tool) => tool.name).sort();
const call = { name: process.env.TOOL, arguments: JSON.parse(process.env.ARGUMENTS) };
const result = await client.callTool(call);
report.is_error = Boolean(result.isError);
report.text = texts(result);
report.again = texts(await client.callTool(call));
await client.close();
console.log(JSON.stringify(report));
