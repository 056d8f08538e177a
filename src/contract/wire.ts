import * as z from "zod";
import { lazy, lazySchema } from "./lazy";
import { JurisdictionSchema, LocationHintSchema } from "./placement";
import { WireContent } from "./content-schema";
import { MessageDelivery, NotBefore } from "./control";
import { checkOutboundUrl } from "./outbound-url";

/** Zod schemas of every HTTP body and query. Strict: unknown fields are rejected. */

export const MAX_BODY_BYTES = 256 * 1024;

const Name = lazySchema(() => z.string().min(1).max(128));
export const ToolFilterSchema = lazySchema(() =>
  z
    .strictObject({ allow: z.array(Name).max(256).optional(), deny: z.array(Name).max(256).optional() })
    .refine((f) => f.allow !== undefined || f.deny !== undefined, {
      message: "toolFilter needs allow or deny",
    }),
);

export const ModelRoute = lazySchema(() => z.string().min(1).max(200));

/** A `requireApproval` pattern: a tool name (letters, digits, `_`, `-`, `.`, `:`), optionally ending in `*`. */
export const APPROVAL_PATTERN = /^[A-Za-z0-9_.:-]{0,127}\*?$/;

/**
 * Which tool calls wait for a person's decision, and for how long (README "Approvals"): on
 * session creation and on start requests; a child's list is its parent's plus its own, and its
 * timeout its own or its parent's.
 */
export const ApprovalFields = lazy(() => ({
  requireApproval: z
    .array(z.string().regex(APPROVAL_PATTERN, 'must be a tool name or a prefix ending in "*"'))
    .max(64)
    .optional(),
  approvalTimeoutSeconds: z
    .number()
    .int()
    .min(1)
    .max(30 * 24 * 3600)
    .optional(),
}));

/** `POST /v1/sessions/:id/approvals/:approvalId`. */
export const DecideApprovalBody = lazySchema(() =>
  z.strictObject({
    decision: z.enum(["approve", "deny"]),
    reason: z.string().max(2000).optional(),
    /**
     * How far an approve reaches (default `once`); it must be one the approval offers (its
     * `scopes`, else `once`). A deny answers whatever the approval offers.
     */
    scope: z.enum(["once", "always"]).optional(),
  }),
);

/**
 * A session's model parameters, on session creation and on start requests (children inherit them
 * unless their start names their own): sampling, and the context window its view is kept within.
 */
export const ModelParamsFields = lazy(() => ({
  temperature: z.number().min(0).max(2).optional(),
  maxOutputTokens: z.number().int().min(1).max(1_000_000).optional(),
  contextWindow: z.number().int().min(256).max(100_000_000).optional(),
}));

/**
 * A URL a caller makes this runtime send requests to (a remote or a2a provider, an MCP server, a
 * callback): the outbound rule (outbound-url.ts: https, or plain http to a loopback host; no user
 * information; no private, shared, link-local, unspecified or metadata host), so a bad one is
 * `400 INVALID_REQUEST` where it arrives, before anything is stored or fetched.
 */
export const ServiceUrl = lazySchema(() =>
  z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .superRefine((raw, ctx) => {
      // runs after a failed url check too: an unparsable value is that check's problem, not this one's
      if (!URL.canParse(raw)) return;
      const problem = checkOutboundUrl(raw, { schemes: ["https"] });
      if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem, input: raw });
    }),
);

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/**
 * The operator's own URL (PUBLIC_URL, set in the deployment's configuration, never by a caller):
 * https, or plain http to a loopback host (two `wrangler dev` on one machine). Exempt from the
 * address rule of `ServiceUrl`: an operator may serve the API on a private address.
 */
export const OperatorUrl = lazySchema(() =>
  z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .refine((raw) => {
      if (!URL.canParse(raw)) return true;
      const url = new URL(raw);
      return url.protocol === "https:" || LOOPBACK.test(url.hostname);
    }, "must be https (plain http only to a loopback host)"),
);

/**
 * A session's MCP servers (docs/semantics.md §15): names are what `mcp__<name>__<tool>`
 * carries; urls follow the outbound rule (`ServiceUrl`); at most 8, names unique.
 */
export const McpServersField = lazySchema(() =>
  z
    .array(
      z.strictObject({
        name: z.string().regex(/^[a-z0-9_-]{1,32}$/, "must match ^[a-z0-9_-]{1,32}$"),
        url: ServiceUrl,
        token: z.string().min(1).max(4096).optional(),
      }),
    )
    .max(8)
    .refine((servers) => new Set(servers.map((s) => s.name)).size === servers.length, "names must be unique"),
);

/** Where a session created for another deployment posts its first turn's result, signed. */
export const CallbackSpec = lazySchema(() =>
  z.strictObject({
    url: ServiceUrl,
    secret: z.string().min(16).max(256),
  }),
);

export const CreateSessionBody = lazySchema(() =>
  z.strictObject({
    model: ModelRoute.optional(),
    ...ModelParamsFields,
    mcpServers: McpServersField.optional(),
    ...ApprovalFields,
    /**
     * What the session's tree may spend, in tokens (input plus output) and/or US dollars (at the
     * deployment's MODEL_PRICES); shared by every session below it (README "Prices and budgets").
     */
    budget: z
      .strictObject({
        tokens: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
        usd: z.number().positive().max(1_000_000_000).optional(),
      })
      .refine((b) => b.tokens !== undefined || b.usd !== undefined, { message: "give tokens, usd or both" })
      .optional(),
    persona: z.string().max(32_768).optional(),
    toolFilter: ToolFilterSchema.optional(),
    label: z.string().min(1).max(200).optional(),
    providers: z.array(Name).max(32).optional(),
    backgroundMode: z.enum(["one-shot", "continuable"]).optional(),
    reportDelivery: z.enum(["quiet", "next-step", "wakeup"]).optional(),
    jurisdiction: JurisdictionSchema.optional(),
    locationHint: LocationHintSchema.optional(),
    /** The same key (with the same body) again answers the same session, without a token. */
    idempotencyKey: z.string().min(1).max(200).optional(),
    callback: CallbackSpec.optional(),
    /** Depth in a delegation tree that began on another deployment (the depth cap still applies). */
    delegationDepth: z.number().int().min(0).max(64).optional(),
  }),
);

/** `POST /v1/sessions/:id/compact`: an empty body or `{}`. */
export const CompactBody = lazySchema(() => z.strictObject({}));

export const SendMessageBody = lazySchema(() =>
  z.strictObject({
    content: WireContent,
    idempotencyKey: z.string().min(1).max(200).optional(),
    delivery: MessageDelivery.optional(),
    notBefore: NotBefore.optional(),
  }),
);

const IntParam = (min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d{1,16}$/, "must be an integer")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

export const EventsQuery = lazySchema(() =>
  z.strictObject({
    after: IntParam(-1, Number.MAX_SAFE_INTEGER).default(-1),
    limit: IntParam(1, 500).default(100),
  }),
);

export const DirectoryQuery = lazySchema(() =>
  z.strictObject({
    limit: IntParam(1, 200).default(50),
    cursor: z.string().min(3).max(100).optional(),
  }),
);

/** `GET …/trace`: `cursor` is a page's `next` (src/trace/trace-cursor.ts reads it). */
export const TraceQuery = lazySchema(() =>
  z.strictObject({
    cursor: z.string().min(1).max(400).optional(),
  }),
);

export const StreamQuery = lazySchema(() =>
  z.strictObject({
    after: IntParam(-1, Number.MAX_SAFE_INTEGER).default(-1),
    /** `true`: also send live text deltas of streaming model steps (`assistant/delta`, no seq). */
    deltas: z
      .enum(["true", "false"])
      .transform((v) => v === "true")
      .optional(),
  }),
);
