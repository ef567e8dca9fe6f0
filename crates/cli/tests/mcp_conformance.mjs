// Drives an MCP server (`wayline mcp gateway` in front of server-everything) with the official
// TypeScript SDK's client (v2) through what tests/mcp_conformance.py does with the Python SDK,
// on the revision MODE names: `legacy` (the initialize handshake) or `2026-07-28` (none).
//
// Arguments: `stdio COMMAND ARG...` or `http URL` (the token in WAYLINE_MCP_TOKEN); PREFIX is
// the gateway's tool prefix; MCP_TS_CLIENT the directory of the @modelcontextprotocol/client
// package. Prints what it saw as one JSON document.

import { join } from "node:path";
import { pathToFileURL } from "node:url";

const sdk = process.env.MCP_TS_CLIENT;
const { Client, StreamableHTTPClientTransport } = await import(
  pathToFileURL(join(sdk, "dist/index.mjs")).href
);
const { StdioClientTransport } = await import(pathToFileURL(join(sdk, "dist/stdio.mjs")).href);

const [kind, target, ...rest] = process.argv.slice(2);
const mode = process.env.MODE ?? "legacy";
const prefix = process.env.PREFIX ?? "";

const transport =
  kind === "stdio"
    ? new StdioClientTransport({ command: target, args: rest, stderr: "ignore" })
    : new StreamableHTTPClientTransport(new URL(target), {
        requestInit: {
          headers: { Authorization: `Bearer ${process.env.WAYLINE_MCP_TOKEN}` },
        },
      });
// Progress as it arrives, in order, before the client handles it: the client (2.3.1) runs its
// notification handlers a microtask after it settles a result, so a notification read together
// with the result reaches `onprogress` too late and is dropped. The order on the wire is what
// the gateway controls; the client chains a handler set before `connect`.
const wire = [];
transport.onmessage = (message) => {
  if (message.method === "notifications/progress") {
    wire.push(message.params.progress);
  } else if (!("method" in message)) {
    wire.push({ response: message.id });
  }
};
const client = new Client(
  { name: "wayline-conformance-ts", version: "1" },
  {
    capabilities: { sampling: {} },
    versionNegotiation: { mode: mode === "legacy" ? "legacy" : { pin: mode } },
  },
);
// The client's model, as far as the test goes: it answers every sampling request.
client.setRequestHandler("sampling/createMessage", async (request) => ({
  role: "assistant",
  model: "fake-model",
  content: { type: "text", text: `sampled: ${request.params.messages[0].content.text}` },
}));

await client.connect(transport);
const report = { protocol: client.getNegotiatedProtocolVersion?.() ?? null };
const texts = (result) =>
  result.content.filter((item) => item.type === "text").map((item) => item.text);

const tools = await client.listTools();
report.tools = tools.tools.map((tool) => tool.name).sort();
report.echo = texts(
  await client.callTool({ name: `${prefix}echo`, arguments: { message: "hello" } }),
);

const resources = await client.listResources();
report.resources = resources.resources.length;
const read = await client.readResource({ uri: resources.resources[0].uri });
report.resource_text = (read.contents[0].text ?? "").slice(0, 20);
const templates = await client.listResourceTemplates();
report.templates = templates.resourceTemplates.map((template) => template.uriTemplate).sort();

const prompts = await client.listPrompts();
report.prompts = prompts.prompts.map((prompt) => prompt.name).sort();
const prompt = await client.getPrompt({
  name: `${prefix}args-prompt`,
  arguments: { city: "Lisbon" },
});
report.prompt = prompt.messages.map((message) => message.content.text);
const completion = await client.complete({
  ref: { type: "ref/prompt", name: `${prefix}completable-prompt` },
  argument: { name: "department", value: "Eng" },
});
report.completion = completion.completion.values;

const progress = [];
const start = wire.length;
const slow = await client.callTool(
  { name: `${prefix}trigger-long-running-operation`, arguments: { duration: 1, steps: 3 } },
  { onprogress: (note) => progress.push(note.progress) },
);
// The callback ran before callTool resolved: every notification came before the result.
report.progress_before_result = progress.slice();
const answered = wire.findIndex((event, at) => at >= start && typeof event === "object");
report.wire_progress = wire.slice(start, answered < 0 ? wire.length : answered);
report.slow = texts(slow);

const sampled = await client.callTool({
  name: `${prefix}trigger-sampling-request`,
  arguments: { prompt: "what is wrong?", maxTokens: 20 },
});
report.sampled = texts(sampled).join(" ");
report.sampled_error = Boolean(sampled.isError);

const state = await client.callTool({ name: "workflow_state", arguments: {} });
report.session = state.structuredContent.session;
report.evidence = state.structuredContent.evidence.length;

await client.close();
console.log(JSON.stringify(report));
