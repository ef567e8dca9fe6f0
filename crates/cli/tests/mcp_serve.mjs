// Lists and calls `wayline mcp serve` with the official TypeScript SDK's client (v2), as
// tests/mcp_serve.py does with the Python SDK: runs the workflow WORKFLOW with INPUTS (JSON),
// collecting progress notifications, then the call ALSO (`[NAME, ARGUMENTS]`) if given.
//
// Arguments: the command and its arguments, or the URL it serves at (the token in
// WAYLINE_MCP_TOKEN). MODE is `legacy` or `2026-07-28`; MCP_TS_CLIENT the directory of the
// @modelcontextprotocol/client package. Prints JSON.

import { join } from "node:path";
import { pathToFileURL } from "node:url";

const sdk = process.env.MCP_TS_CLIENT;
const { Client, StreamableHTTPClientTransport } = await import(
  pathToFileURL(join(sdk, "dist/index.mjs")).href
);
const { StdioClientTransport } = await import(pathToFileURL(join(sdk, "dist/stdio.mjs")).href);

const [target, ...rest] = process.argv.slice(2);
const mode = process.env.MODE ?? "legacy";
const transport = target.startsWith("http://")
  ? new StreamableHTTPClientTransport(new URL(target), {
      requestInit: {
        headers: { Authorization: `Bearer ${process.env.WAYLINE_MCP_TOKEN}` },
      },
    })
  : new StdioClientTransport({ command: target, args: rest, stderr: "ignore" });
// Progress as it arrives, in order, before the client handles it: the client (2.3.1) runs its
// notification handlers a microtask after it settles a result, so a notification read together
// with the result reaches `onprogress` too late and is dropped. The order on the wire is what
// the server controls; the client chains a handler set before `connect`.
const wire = [];
transport.onmessage = (message) => {
  if (message.method === "notifications/progress") {
    const note = message.params;
    wire.push({ done: note.progress, total: note.total, message: note.message });
  } else if (!("method" in message)) {
    wire.push({ response: message.id });
  }
};
const client = new Client(
  { name: "wayline-serve-ts", version: "1" },
  { versionNegotiation: { mode: mode === "legacy" ? "legacy" : { pin: mode } } },
);
await client.connect(transport);

const report = { protocol: client.getNegotiatedProtocolVersion() ?? null };
const tools = await client.listTools();
report.tools = Object.fromEntries(tools.tools.map((tool) => [tool.name, tool.inputSchema]));
const progress = [];
const start = wire.length;
const result = await client.callTool(
  { name: process.env.WORKFLOW, arguments: JSON.parse(process.env.INPUTS) },
  {
    onprogress: (note) =>
      progress.push({ done: note.progress, total: note.total, message: note.message }),
  },
);
const answered = wire.findIndex((event, at) => at >= start && "response" in event);
report.wire_progress = wire.slice(start, answered < 0 ? wire.length : answered);
report.is_error = Boolean(result.isError);
report.structured = result.structuredContent ?? null;
report.text = result.content.filter((item) => item.type === "text").map((item) => item.text);
if (process.env.ALSO) {
  const [name, args] = JSON.parse(process.env.ALSO);
  const also = await client.callTool({ name, arguments: args });
  report.also = also.structuredContent ?? null;
}
report.progress = progress;
await client.close();
console.log(JSON.stringify(report));
