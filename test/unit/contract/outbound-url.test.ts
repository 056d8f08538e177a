import { describe, expect, it } from "vitest";
import { checkOutboundUrl } from "../../../src/contract/outbound-url";
import { CallbackSpec, CreateSessionBody, McpServersField, ServiceUrl } from "../../../src/contract/wire";
import { AcpUrl } from "../../../src/providers/acp-protocol";

/**
 * The outbound-URL rule (README, Security and limits: "Outbound requests the runtime makes for its callers"):
 * https (wss for ACP), plain http/ws to a loopback host only, no user information, no private,
 * shared, link-local, unspecified or metadata literal host in any spelling the WHATWG URL parser
 * normalises, nor one of the well-known metadata host names. Every form on each side of the line.
 */

const HTTP = { schemes: ["https"] } as const;
const ACP = { schemes: ["wss", "https"] } as const;

/** Every spelling of one address: dotted, IPv4-mapped (dotted and hex), and the odd IPv4 forms. */
function spellings(dotted: string): string[] {
  const parts = dotted.split(".").map(Number) as [number, number, number, number];
  const n = ((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]) >>> 0;
  const hex16 = (v: number) => v.toString(16);
  return [
    dotted,
    String(n), // decimal: http://167772161/
    `0x${n.toString(16)}`, // hex
    parts.map((p) => `0${p.toString(8)}`).join("."), // octal, each part
    `0x${hex16(parts[0])}.${parts[1]}.${parts[2]}.${parts[3]}`, // mixed
    `${dotted}.`, // a trailing dot
    `[::ffff:${dotted}]`, // IPv4-mapped, dotted
    `[::ffff:${hex16(n >>> 16)}:${hex16(n & 0xffff)}]`, // IPv4-mapped, hex
    `[0:0:0:0:0:ffff:${dotted}]`, // IPv4-mapped, long form
  ];
}

/** The refused IPv4 blocks, each by its first and last address (the page's list). */
const FORBIDDEN_V4: Record<string, string[]> = {
  "0.0.0.0/8 (unspecified)": ["0.0.0.0", "0.255.255.255", "0.1.2.3"],
  "10.0.0.0/8 (private)": ["10.0.0.0", "10.0.0.1", "10.255.255.255"],
  "172.16.0.0/12 (private)": ["172.16.0.0", "172.20.1.1", "172.31.255.255"],
  "192.168.0.0/16 (private)": ["192.168.0.0", "192.168.1.1", "192.168.255.255"],
  "100.64.0.0/10 (shared)": ["100.64.0.0", "100.100.100.200", "100.127.255.255"],
  "169.254.0.0/16 (link-local, metadata)": ["169.254.0.0", "169.254.169.254", "169.254.255.255"],
};

/** Beyond the page: metadata addresses outside those blocks, multicast, reserved, broadcast. */
const FORBIDDEN_V4_BEYOND: Record<string, string[]> = {
  "168.63.129.16 (Azure's platform address)": ["168.63.129.16"],
  "192.0.0.0/24 (IETF protocol assignments; Oracle Cloud's metadata)": ["192.0.0.192", "192.0.0.0"],
  "224.0.0.0/4 (multicast)": ["224.0.0.1", "239.255.255.255"],
  "240.0.0.0/4 (reserved, broadcast)": ["240.0.0.1", "255.255.255.255"],
};

/** Neighbours of the refused blocks: public addresses that must pass. */
const PUBLIC_V4 = [
  "1.0.0.0",
  "8.8.8.8",
  "9.255.255.255",
  "11.0.0.0",
  "172.15.255.255",
  "172.32.0.0",
  "192.167.255.255",
  "192.169.0.0",
  "192.0.1.0",
  "100.63.255.255",
  "100.128.0.0",
  "169.253.255.255",
  "169.255.0.0",
  "168.63.129.17",
  "223.255.255.255",
  "126.255.255.255",
  "128.0.0.0",
];

const FORBIDDEN_V6: Record<string, string[]> = {
  ":: (unspecified)": ["[::]", "[0:0:0:0:0:0:0:0]"],
  "fc00::/7 (unique local, AWS's IPv6 metadata)": ["[fc00::]", "[fd00:ec2::254]", "[fdff:ffff::1]"],
  "fe80::/10 (link-local)": ["[fe80::]", "[fe80::1]", "[febf:ffff::1]"],
  // beyond the page
  "fec0::/10 (site-local, deprecated but still private)": ["[fec0::1]", "[feff::1]"],
  "ff00::/8 (multicast)": ["[ff02::1]", "[ff05::2]"],
  "::/96 (IPv4-compatible, deprecated)": ["[::a00:1]", "[::8.8.8.8]"],
  "::ffff:0:0:0/96 (IPv4-translated, of a private address)": ["[::ffff:0:a00:1]"],
  "64:ff9b::/96 (NAT64, of a private address)": ["[64:ff9b::10.0.0.1]", "[64:ff9b::a9fe:a9fe]"],
  "64:ff9b::/96 (NAT64, of a loopback address)": ["[64:ff9b::127.0.0.1]"],
  "64:ff9b:1::/48 (local-use NAT64)": ["[64:ff9b:1::808:808]"],
  "2002::/16 (6to4, of a private address)": ["[2002:a00:1::]", "[2002:a9fe:a9fe::1]", "[2002:c0a8:101::]"],
};

const PUBLIC_V6 = [
  "[2606:4700:4700::1111]",
  "[2001:4860:4860::8888]",
  "[64:ff9b::8.8.8.8]", // NAT64 of a public address
  "[2002:808:808::1]", // 6to4 of a public address
  "[fbff:ffff::1]", // just below fc00::/7
  "[fe00::1]", // between fc00::/7 and fe80::/10
];

const METADATA_NAMES = [
  "metadata.google.internal",
  "METADATA.GOOGLE.INTERNAL",
  "metadata.google.internal.",
  "metadata",
  "metadata.",
  "metadata.goog",
  "instance-data",
  "instance-data.ec2.internal",
  "anything.internal", // beyond the page: .internal is reserved for private use
];

/** Loopback hosts in every spelling: plain http is allowed to them, https too. */
const LOOPBACK = [
  "localhost",
  "LOCALHOST",
  "localhost.",
  "dev.localhost",
  "a.b.localhost",
  "127.0.0.1",
  "127.255.255.254",
  "127.1",
  "2130706433",
  "0x7f.1",
  "0177.0.0.1",
  "[::1]",
  "[0:0:0:0:0:0:0:1]",
  "[::ffff:127.0.0.1]",
  "[::ffff:7f00:1]",
];

describe("the outbound-URL rule: what passes", () => {
  it.each(["https://example.com", "https://example.com:8443/base/path?x=1#f", "https://a.b.example.org/"])(
    "https to a public name: %s",
    (url) => expect(checkOutboundUrl(url, HTTP)).toBeUndefined(),
  );

  it.each(PUBLIC_V4)("https to a public IPv4 literal, in every spelling: %s", (address) => {
    for (const host of spellings(address))
      expect(checkOutboundUrl(`https://${host}:443/x`, HTTP), host).toBeUndefined();
  });

  it.each(PUBLIC_V6)("https to a public IPv6 literal: %s", (host) => {
    expect(checkOutboundUrl(`https://${host}/`, HTTP)).toBeUndefined();
  });

  it.each(LOOPBACK)("plain http, and https, to a loopback host: %s", (host) => {
    expect(checkOutboundUrl(`http://${host}:8787/v1`, HTTP)).toBeUndefined();
    expect(checkOutboundUrl(`https://${host}/`, HTTP)).toBeUndefined();
  });

  it("wss anywhere public and ws to loopback where the caller allows WebSockets (ACP)", () => {
    expect(checkOutboundUrl("wss://agents.example.com/acp", ACP)).toBeUndefined();
    expect(checkOutboundUrl("https://agents.example.com/acp", ACP)).toBeUndefined();
    expect(checkOutboundUrl("ws://127.0.0.1:9000", ACP)).toBeUndefined();
    expect(checkOutboundUrl("ws://localhost:9000", ACP)).toBeUndefined();
    expect(checkOutboundUrl("http://[::1]:9000", ACP)).toBeUndefined();
  });

  it("an empty user information part (`@` alone) is no user information", () => {
    expect(checkOutboundUrl("https://@example.com/", HTTP)).toBeUndefined();
  });
});

describe("the outbound-URL rule: what is refused", () => {
  it.each([
    "http://example.com",
    "http://8.8.8.8/",
    "http://[2606:4700:4700::1111]/",
    "http://localhost.example.com/",
    "http://127.0.0.1.nip.io/",
    "ftp://example.com/",
    "file:///etc/passwd",
    "javascript:alert(1)",
    "data:text/plain,hi",
    "ws://example.com/",
    "wss://example.com/",
    "ws://127.0.0.1/",
  ])("a scheme other than https, or plain http to a host that is not loopback: %s", (url) => {
    expect(checkOutboundUrl(url, HTTP)).toMatch(/must be https \(plain http only to a loopback host\)/);
  });

  it.each(["ws://example.com/", "http://example.com/", "ftp://example.com/"])(
    "with WebSockets allowed, plain ws or http to a host that is not loopback: %s",
    (url) => {
      expect(checkOutboundUrl(url, ACP)).toMatch(
        /must be wss or https \(ws or http only to a loopback host\)/,
      );
    },
  );

  it.each(["not a url", "", "https://", "//example.com/x", "https://exa mple.com/"])(
    "anything that is not an absolute URL: %j",
    (url) => expect(checkOutboundUrl(url, HTTP)).toBe("must be an absolute URL"),
  );

  it.each([
    "https://user:pass@example.com/",
    "https://user@example.com/",
    "https://:pass@example.com/",
    "http://user:pass@127.0.0.1:8787/",
    "wss://u:p@agents.example.com/",
  ])("user information: %s", (url) => {
    expect(checkOutboundUrl(url, ACP)).toBe("must not carry user information");
  });

  for (const [block, addresses] of Object.entries({ ...FORBIDDEN_V4, ...FORBIDDEN_V4_BEYOND })) {
    it(`${block}: every address, in every spelling, over https and ws/wss`, () => {
      for (const address of addresses)
        for (const host of spellings(address)) {
          expect(checkOutboundUrl(`https://${host}/`, HTTP), host).toMatch(/^must not name an? .+ address$/);
          expect(checkOutboundUrl(`wss://${host}/`, ACP), host).toMatch(/^must not name an? .+ address$/);
        }
    });
  }

  it("the odd IPv4 spellings WHATWG URL parsing normalises name the address they normalise to", () => {
    for (const host of [
      "167772161",
      "0xa000001",
      "012.0.0.1",
      "10.1",
      "10.0.1",
      "%31%30.0.0.1",
      "１０.0.0.1",
    ])
      expect(checkOutboundUrl(`https://${host}/`, HTTP), host).toBe("must not name a private address");
    expect(checkOutboundUrl("https://2852039166/", HTTP)).toBe("must not name a link-local address");
    expect(checkOutboundUrl("https://0/", HTTP)).toBe("must not name an unspecified address");
  });

  for (const [block, hosts] of Object.entries(FORBIDDEN_V6)) {
    it(`${block}: ${hosts.join(", ")}`, () => {
      for (const host of hosts) {
        expect(checkOutboundUrl(`https://${host}/`, HTTP), host).toMatch(/^must not name an? .+ address$/);
        expect(checkOutboundUrl(`http://${host}:80/`, HTTP), host).toMatch(/^must /);
      }
    });
  }

  it.each(METADATA_NAMES)("a metadata or private-use host name: %s", (host) => {
    expect(checkOutboundUrl(`https://${host}/computeMetadata/v1/`, HTTP)).toBe(
      "must not name a cloud metadata or private-use host",
    );
    expect(checkOutboundUrl(`http://${host}/`, HTTP)).toMatch(/^must /);
  });

  it("plain http to a refused address names the scheme first (the address is refused either way)", () => {
    expect(checkOutboundUrl("http://10.0.0.1/", HTTP)).toMatch(/must be https/);
    expect(checkOutboundUrl("http://0.0.0.0:8080/", HTTP)).toMatch(/must be https/);
  });
});

describe("the outbound-URL rule with an origin to stay on (an A2A card's endpoint)", () => {
  const origin = "https://agent.example";

  it("passes a URL on that origin, however spelled", () => {
    for (const url of ["https://agent.example/a2a", "https://AGENT.example:443/x?y", "https://agent.example"])
      expect(checkOutboundUrl(url, { ...HTTP, origin }), url).toBeUndefined();
  });

  it("refuses another host, port or scheme, naming the other origin", () => {
    for (const [url, other] of [
      ["https://elsewhere.example/a2a", "https://elsewhere.example"],
      ["https://agent.example:8443/a2a", "https://agent.example:8443"],
      ["https://sub.agent.example/a2a", "https://sub.agent.example"],
    ] as const)
      expect(checkOutboundUrl(url, { ...HTTP, origin }), url).toBe(`is on another origin (${other})`);
  });

  it("applies the rule first: a forbidden URL is refused for what it is", () => {
    expect(checkOutboundUrl("http://0.0.0.0:9/a2a", { ...HTTP, origin })).toMatch(/^must be https/);
    expect(
      checkOutboundUrl("http://127.0.0.1:9/a2a", { ...HTTP, origin: "http://127.0.0.1:9" }),
    ).toBeUndefined();
  });
});

describe("the URL schemas apply the rule (a 400 INVALID_REQUEST naming the field)", () => {
  const issue = (result: {
    success: boolean;
    error?: { issues: { path: PropertyKey[]; message: string }[] };
  }) => (result.success ? undefined : result.error!.issues.map((i) => `${i.path.join(".")}: ${i.message}`));

  it("ServiceUrl: provider URLs (remote, a2a)", () => {
    expect(ServiceUrl.safeParse("https://b.example.com/base").success).toBe(true);
    expect(ServiceUrl.safeParse("http://127.0.0.1:8788").success).toBe(true);
    expect(issue(ServiceUrl.safeParse("https://169.254.169.254/latest"))).toEqual([
      ": must not name a link-local address",
    ]);
    expect(issue(ServiceUrl.safeParse("https://u:p@b.example.com"))).toEqual([
      ": must not carry user information",
    ]);
  });

  it("AcpUrl: wss and https, ws and http to loopback, the same address rule", () => {
    expect(AcpUrl.safeParse("wss://agents.example.com").success).toBe(true);
    expect(AcpUrl.safeParse("ws://127.0.0.1:9100").success).toBe(true);
    expect(issue(AcpUrl.safeParse("wss://[fd00::1]/"))).toEqual([": must not name a private address"]);
    expect(issue(AcpUrl.safeParse("ws://agents.example.com"))).toEqual([
      ": must be wss or https (ws or http only to a loopback host)",
    ]);
  });

  it("mcpServers[].url and callback.url, at their paths", () => {
    expect(issue(McpServersField.safeParse([{ name: "calc", url: "https://[::ffff:a00:1]/mcp" }]))).toEqual([
      "0.url: must not name a private address",
    ]);
    expect(
      issue(CallbackSpec.safeParse({ url: "https://metadata.google.internal/", secret: "x".repeat(16) })),
    ).toEqual(["url: must not name a cloud metadata or private-use host"]);
    expect(
      issue(CreateSessionBody.safeParse({ callback: { url: "https://10.1/", secret: "x".repeat(16) } })),
    ).toEqual(["callback.url: must not name a private address"]);
  });
});
