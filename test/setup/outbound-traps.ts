import { A2A_PROTOCOL_VERSION, AgentCard } from "@a2a-js/sdk";
import { type IncomingMessage, nodeHttp, type ServerResponse } from "./node-http";

/**
 * Two loopback servers for the outbound-URL tests (test/workers/**): `home`, an origin a caller
 * may name, whose answers try to send the runtime somewhere else, and `trap`, that other origin,
 * which records every request it gets. A test names a fresh `<nonce>` in its paths and then asks
 * either server what reached it under that nonce (`GET /__hits?nonce=<nonce>`, never recorded).
 *
 *   home ANY /redirect/<status>/<nonce>/<rest>        -> <status>, Location: <trap>/landed/<nonce>/<rest>
 *   home GET /card-elsewhere/<nonce>/.well-known/agent-card.json
 *                                                     -> an A2A card whose endpoint is <trap>/a2a/<nonce>
 *   home GET /card-unspecified/<nonce>/.well-known/agent-card.json
 *                                                     -> one whose endpoint is http://0.0.0.0:<trap port>/a2a/<nonce>
 *   trap ANY anything else                            -> 200 {} (recorded)
 *
 * Both are on 127.0.0.1 (loopback: plain http passes the rule) on different ports, so different
 * origins.
 */

export interface Hit {
  method: string;
  path: string;
  authorization: string | null;
  body: string;
}

export interface OutboundTraps {
  /** `http://127.0.0.1:<port>`: the origin a caller names. */
  home: string;
  /** `http://127.0.0.1:<port>`: the other origin, which must never be reached. */
  trap: string;
  close(): Promise<void>;
}

declare module "vitest" {
  export interface ProvidedContext {
    outboundTraps: { home: string; trap: string };
  }
}

function card(endpoint: string): unknown {
  return AgentCard.toJSON({
    name: "card-elsewhere",
    description: "An A2A agent whose card names an endpoint off the origin it is served from.",
    supportedInterfaces: [
      { url: endpoint, protocolBinding: "JSONRPC", tenant: "", protocolVersion: A2A_PROTOCOL_VERSION },
    ],
    provider: undefined,
    version: "1.0.0",
    capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [],
    signatures: [],
  });
}

function nonceOf(path: string): string | undefined {
  return /^\/(?:landed|a2a|redirect\/\d{3}|card-elsewhere|card-unspecified)\/([^/]+)/.exec(path)?.[1];
}

export async function startOutboundTraps(): Promise<OutboundTraps> {
  const http = await nodeHttp();
  const hits = { home: [] as Hit[], trap: [] as Hit[] };
  const ports = { home: 0, trap: 0 };
  const trapUrl = () => `http://127.0.0.1:${ports.trap}`;

  const answer = (
    res: ServerResponse,
    status: number,
    body: unknown,
    headers: Record<string, string> = {},
  ) => {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  };

  const serve = (
    which: "home" | "trap",
    route: (req: IncomingMessage, path: string, res: ServerResponse) => void,
  ) =>
    http.createServer((req, res) => {
      const chunks: Uint8Array[] = [];
      req.on("data", (chunk) => chunks.push(chunk));
      req.on("end", () => {
        const url = new URL(req.url ?? "/", "http://127.0.0.1");
        if (url.pathname === "/__hits") {
          const nonce = url.searchParams.get("nonce");
          answer(
            res,
            200,
            hits[which].filter((h) => nonceOf(h.path) === nonce),
          );
          return;
        }
        const authorization = req.headers.authorization;
        hits[which].push({
          method: req.method ?? "GET",
          path: `${url.pathname}${url.search}`,
          authorization: typeof authorization === "string" ? authorization : null,
          body: new TextDecoder().decode(
            chunks.length === 1 ? chunks[0] : new Uint8Array(chunks.flatMap((c) => [...c])),
          ),
        });
        route(req, `${url.pathname}${url.search}`, res);
      });
    });

  const home = serve("home", (_req, path, res) => {
    let match = /^\/redirect\/(\d{3})\/(.*)$/.exec(path);
    if (match) {
      res.writeHead(Number(match[1]), { location: `${trapUrl()}/landed/${match[2]}`, "content-length": "0" });
      res.end();
      return;
    }
    match = /^\/card-(elsewhere|unspecified)\/([^/]+)\/\.well-known\/agent-card\.json$/.exec(path);
    if (match) {
      const host = match[1] === "elsewhere" ? trapUrl() : `http://0.0.0.0:${ports.trap}`;
      answer(res, 200, card(`${host}/a2a/${match[2]}`));
      return;
    }
    answer(res, 404, { error: "not found" });
  });
  const trap = serve("trap", (_req, _path, res) => answer(res, 200, {}));

  for (const [name, server] of [
    ["home", home],
    ["trap", trap],
  ] as const) {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error(`the ${name} trap has no port`);
    ports[name] = address.port;
  }
  const close = (server: typeof home) =>
    new Promise<void>((resolve, reject) => {
      server.closeAllConnections?.();
      server.close((error) => (error ? reject(error) : resolve()));
    });
  return {
    home: `http://127.0.0.1:${ports.home}`,
    trap: trapUrl(),
    close: async () => {
      await Promise.all([close(home), close(trap)]);
    },
  };
}
