/**
 * The few shapes of `node:http` the tests' servers (openai-server.ts, mcp-server.ts) use, and
 * its loader. The project has no `@types/node` (the Worker code must not see Node types), so the
 * module is loaded dynamically and typed structurally here.
 */

export interface IncomingMessage {
  method?: string;
  url?: string;
  headers: Record<string, string | string[] | undefined>;
  on(event: "data", listener: (chunk: Uint8Array) => void): void;
  on(event: "end" | "error", listener: (error?: unknown) => void): void;
}

export interface ServerResponse {
  writeHead(status: number, headers: Record<string, string>): void;
  write(chunk: string | Uint8Array): boolean;
  end(body?: string): void;
}

export interface HttpServer {
  listen(port: number, host: string, callback: () => void): void;
  address(): { port: number } | string | null;
  close(callback: (error?: unknown) => void): void;
  closeAllConnections?(): void;
  on(event: "error", listener: (error: unknown) => void): void;
}

export interface NodeHttp {
  createServer(handler: (req: IncomingMessage, res: ServerResponse) => void): HttpServer;
}

/** `node:http`, loaded at run time (vitest's globalSetup runs in Node). */
export async function nodeHttp(): Promise<NodeHttp> {
  const specifier = "node:http";
  return (await import(specifier)) as NodeHttp;
}
