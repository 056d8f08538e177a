import { ADMIN, workerFetch } from "./api";

/**
 * Raw JSON-RPC to the Worker's protocol faces, as a 2025-era client posts it: the MCP face
 * (`/v1/sessions/:id/mcp`) and the A2A face (`/v1/a2a`). For what the official SDKs' clients cannot
 * send (bad bodies, exact sizes) and for one-line calls; the faces' own suites also drive them
 * with the SDKs' clients.
 */

export const mcpPath = (id: string): string => `/v1/sessions/${id}/mcp`;

/** One POST of `body` (sent as given); `token: null` sends none. */
export function postJsonRpc(
  path: string,
  body: BodyInit,
  { token = ADMIN, headers = {} }: { token?: string | null; headers?: Record<string, string> } = {},
): Promise<Response> {
  const sent = new Headers({
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
    "a2a-version": "1.0",
    ...headers,
  });
  if (token !== null) sent.set("authorization", `Bearer ${token}`);
  return workerFetch(new Request(`http://example.com${path}`, { method: "POST", headers: sent, body }));
}

/** The JSON-RPC answer of a response: its JSON body, or the last event of its SSE body. */
export async function jsonRpcAnswer(response: Response): Promise<any> {
  const text = await response.text();
  if (!/text\/event-stream/.test(response.headers.get("content-type") ?? "")) return JSON.parse(text);
  return text
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => JSON.parse(l.slice(6)))
    .at(-1);
}
