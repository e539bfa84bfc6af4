// A 2025-11-25 (stateful, handshake-era) MCP server written with the TypeScript SDK, whose tool
// list changes at run time: `add_tool` registers a tool, and the SDK announces it with
// notifications/tools/list_changed (the notification path; 2026 servers use subscriptions/listen).
// Run: node legacy_tools.mjs <node_modules folder>
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.argv[2];
const load = (path) => import(pathToFileURL(join(modules, "@modelcontextprotocol/sdk/dist/esm", path)).href);
const { McpServer } = await load("server/mcp.js");
const { StdioServerTransport } = await load("server/stdio.js");
const { z } = await import(pathToFileURL(join(modules, "zod/index.js")).href);

const server = new McpServer({ name: "legacy-tools", version: "1.0.0" });

server.registerTool(
  "add_tool",
  { description: "Register a tool named `name`", inputSchema: { name: z.string() } },
  async ({ name }) => {
    server.registerTool(name, { description: `added at run time (${name})` }, async () => ({
      content: [{ type: "text", text: `${name} answers` }],
    }));
    return { content: [{ type: "text", text: `added ${name}` }] };
  },
);

await server.connect(new StdioServerTransport());
