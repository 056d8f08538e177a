/**
 * The one rule for every URL a caller can make this runtime send a request to (README, Security and limits
 * "Outbound requests the runtime makes for its callers"): provider URLs, an A2A agent card's
 * endpoint, `mcpServers[].url`, `callback.url`. The operator's own URLs (PUBLIC_URL,
 * OPENAI_BASE_URL) are exempt. Pure, no I/O: the URL schemas (wire.ts, acp-protocol.ts) refuse with
 * it where a URL arrives, and platform/outbound-fetch.ts checks it again on every request.
 *
 * A URL passes when it is
 *   * `https` (or `wss` where WebSockets are allowed), or plain `http`/`ws` to a loopback host:
 *     `localhost`, `*.localhost`, `127.0.0.0/8`, `[::1]` (and `[::ffff:127.x.y.z]`): local development;
 *   * without user information (`user:pass@`);
 *   * not a private, shared, link-local, unspecified, metadata or otherwise non-public literal
 *     address (the blocks below), in any spelling: the host is read after WHATWG URL parsing,
 *     which normalises decimal (`2130706433`), hex, octal and short IPv4 forms, percent-encoding,
 *     full-width digits and IPv6 compression, exactly as `fetch` will read it;
 *   * not a well-known cloud metadata host name, nor a name under `.internal`;
 *   * on `origin`, when one is given (an A2A card's endpoint stays on its provider's origin).
 *
 * Host names are not resolved: a public name that resolves to a private address is outside this
 * rule (Workers' outbound fetch does not reach private networks on Cloudflare's edge).
 */

/** A secure scheme a URL may use; its plain form (http, ws) is allowed to loopback hosts only. */
export type SecureScheme = "https" | "wss";

export interface OutboundUrlOptions {
  /** The secure schemes allowed (default `["https"]`). */
  schemes?: readonly SecureScheme[];
  /** The origin the URL must be on (`https://host[:port]`). */
  origin?: string;
}

const PLAIN: Record<SecureScheme, string> = { https: "http", wss: "ws" };

/** Undefined when `raw` passes the rule; otherwise what is wrong, in a few words ("must …"). */
export function checkOutboundUrl(raw: string, options: OutboundUrlOptions = {}): string | undefined {
  const schemes = options.schemes ?? ["https"];
  if (!URL.canParse(raw)) return "must be an absolute URL";
  const url = new URL(raw);
  const scheme = url.protocol.slice(0, -1);
  const host = classifyHost(url.hostname);
  const secure = (schemes as readonly string[]).includes(scheme);
  const plain = schemes.some((s) => PLAIN[s] === scheme);
  if (!secure && !(plain && host.kind === "loopback")) return schemeProblem(schemes);
  if (url.username !== "" || url.password !== "") return "must not carry user information";
  if (host.kind === "forbidden") return host.problem;
  if (options.origin !== undefined && url.origin !== options.origin)
    return `is on another origin (${url.origin})`;
  return undefined;
}

function schemeProblem(schemes: readonly SecureScheme[]): string {
  const secure = schemes.join(" or ");
  const plain = schemes.map((s) => PLAIN[s]).join(" or ");
  return `must be ${secure} (${plain === "http" ? "plain http" : plain} only to a loopback host)`;
}

// ---------------------------------------------------------------- hosts

type HostClass = { kind: "loopback" } | { kind: "public" } | { kind: "forbidden"; problem: string };

const LOOPBACK: HostClass = { kind: "loopback" };
const PUBLIC: HostClass = { kind: "public" };
const forbidden = (what: string): HostClass => ({
  kind: "forbidden",
  problem: `must not name ${/^[aeiou]/i.test(what) ? "an" : "a"} ${what} address`,
});

/**
 * Cloud metadata services by name (Google's, AWS's) and the `.internal` names ICANN reserved for
 * private use (never a public host); a trailing dot names the same host.
 */
const METADATA_NAMES = new Set(["metadata", "metadata.google.internal", "metadata.goog", "instance-data"]);

/** A WHATWG-normalised hostname: a domain (lower case), dotted IPv4, or `[IPv6]`. */
function classifyHost(hostname: string): HostClass {
  if (hostname.startsWith("[")) {
    const groups = parseIpv6(hostname.slice(1, -1));
    return groups ? classifyIpv6(groups) : forbidden("unreadable");
  }
  const v4 = parseIpv4(hostname);
  if (v4 !== undefined) return classifyIpv4(v4);
  const name = hostname.endsWith(".") ? hostname.slice(0, -1) : hostname;
  if (name === "localhost" || name.endsWith(".localhost")) return LOOPBACK;
  if (METADATA_NAMES.has(name) || name === "internal" || name.endsWith(".internal"))
    return { kind: "forbidden", problem: "must not name a cloud metadata or private-use host" };
  return PUBLIC;
}

// ---------------------------------------------------------------- IPv4

/** IPv4 blocks that are not a public host, in order; `prefix` bits of `base` (a 32-bit value). */
const V4_BLOCKS: readonly { base: number; prefix: number; what: string }[] = [
  { base: ip4(0, 0, 0, 0), prefix: 8, what: "unspecified" },
  { base: ip4(10, 0, 0, 0), prefix: 8, what: "private" },
  { base: ip4(100, 64, 0, 0), prefix: 10, what: "shared" },
  { base: ip4(127, 0, 0, 0), prefix: 8, what: "loopback" },
  { base: ip4(169, 254, 0, 0), prefix: 16, what: "link-local" },
  { base: ip4(172, 16, 0, 0), prefix: 12, what: "private" },
  // beyond the page: IETF protocol assignments (Oracle Cloud's metadata is 192.0.0.192)
  { base: ip4(192, 0, 0, 0), prefix: 24, what: "special-purpose" },
  { base: ip4(192, 168, 0, 0), prefix: 16, what: "private" },
  // Azure's platform address (its metadata and DHCP endpoint), outside every private block
  { base: ip4(168, 63, 129, 16), prefix: 32, what: "cloud metadata" },
  // multicast, reserved and broadcast: never one public host
  { base: ip4(224, 0, 0, 0), prefix: 4, what: "multicast" },
  { base: ip4(240, 0, 0, 0), prefix: 4, what: "reserved" },
];

function ip4(a: number, b: number, c: number, d: number): number {
  return ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
}

/** The 32-bit value of a dotted quad (what WHATWG parsing leaves of any IPv4 spelling). */
function parseIpv4(host: string): number | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (!m) return undefined;
  const parts = m.slice(1).map(Number);
  if (parts.some((p) => p > 255)) return undefined;
  return ip4(parts[0]!, parts[1]!, parts[2]!, parts[3]!);
}

function inBlock(address: number, base: number, prefix: number): boolean {
  const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
  return (address & mask) >>> 0 === base;
}

function classifyIpv4(address: number): HostClass {
  const block = V4_BLOCKS.find((b) => inBlock(address, b.base, b.prefix));
  if (!block) return PUBLIC;
  return block.what === "loopback" ? LOOPBACK : forbidden(block.what);
}

// ---------------------------------------------------------------- IPv6

/** Eight 16-bit groups of an IPv6 literal (compressed, or with a dotted IPv4 tail), or undefined. */
function parseIpv6(text: string): number[] | undefined {
  let rest = text.toLowerCase();
  const tail: number[] = [];
  const dotted = /^(.*:)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(rest);
  if (dotted) {
    const v4 = parseIpv4(dotted[2]!);
    if (v4 === undefined) return undefined;
    tail.push(v4 >>> 16, v4 & 0xffff);
    rest = dotted[1]!.endsWith("::") ? dotted[1]! : dotted[1]!.slice(0, -1);
  }
  const halves = rest.split("::");
  if (halves.length > 2) return undefined;
  const read = (part: string) => (part === "" ? [] : part.split(":"));
  const head = read(halves[0]!);
  const after = halves.length === 2 ? read(halves[1]!) : [];
  const groups = [...head, ...after];
  if (groups.some((g) => !/^[0-9a-f]{1,4}$/.test(g))) return undefined;
  const missing = 8 - groups.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined;
  const fill = halves.length === 2 ? new Array<string>(missing).fill("0") : [];
  return [...head, ...fill, ...after].map((g) => Number.parseInt(g, 16)).concat(tail);
}

const zeros = (groups: readonly number[], from: number, to: number) =>
  groups.slice(from, to).every((g) => g === 0);
const v4At = (groups: readonly number[], at: number) => ((groups[at]! << 16) | groups[at + 1]!) >>> 0;

/** An address that embeds an IPv4 one and reaches it through a translator: only a public one. */
function translated(address: number, how: string): HostClass {
  const inner = classifyIpv4(address);
  if (inner.kind === "public") return PUBLIC;
  return inner.kind === "loopback" ? forbidden(`${how} loopback`) : inner;
}

function classifyIpv6(g: readonly number[]): HostClass {
  if (zeros(g, 0, 5)) {
    if (g[5] === 0xffff) return classifyIpv4(v4At(g, 6)); // ::ffff:a.b.c.d, IPv4-mapped
    if (g[5] === 0 && zeros(g, 6, 7)) {
      if (g[7] === 0) return forbidden("unspecified"); // ::
      if (g[7] === 1) return LOOPBACK; // ::1
    }
    if (g[5] === 0) return forbidden("IPv4-compatible"); // ::a.b.c.d, deprecated (RFC 4291)
  }
  if (zeros(g, 0, 4) && g[4] === 0xffff && g[5] === 0) return translated(v4At(g, 6), "IPv4-translated"); // ::ffff:0:a.b.c.d (RFC 6052, SIIT)
  if (g[0] === 0x64 && g[1] === 0xff9b) {
    if (zeros(g, 2, 6)) return translated(v4At(g, 6), "NAT64"); // 64:ff9b::/96 (RFC 6052)
    if (g[2] === 1) return forbidden("local-use NAT64"); // 64:ff9b:1::/48 (RFC 8215)
  }
  if (g[0] === 0x2002) return translated(v4At(g, 1), "6to4"); // 2002:a.b.c.d::/48 (RFC 3056)
  const first = g[0]!;
  if ((first & 0xfe00) === 0xfc00) return forbidden("private"); // fc00::/7, unique local
  if ((first & 0xffc0) === 0xfe80) return forbidden("link-local"); // fe80::/10
  if ((first & 0xffc0) === 0xfec0) return forbidden("site-local"); // fec0::/10, deprecated, private
  if ((first & 0xff00) === 0xff00) return forbidden("multicast"); // ff00::/8
  return PUBLIC;
}
