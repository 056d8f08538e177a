import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { workerFetch } from "./api";

/** The official MCP client, connected to session `id`'s MCP face in this Worker with `token`. */
export async function connectMcpFace(id: string, token: string): Promise<Client> {
  const client = new Client({ name: "subagents-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`http://example.com/v1/sessions/${id}/mcp`), {
    fetch: (input, init) => workerFetch(new Request(input, init)),
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}
