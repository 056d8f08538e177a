import { quoteAll } from "../core/quote";
import type { Deployment } from "../platform/deployment";
import { protocolMissing } from "../protocols/protocol";
import { defaultModelOf, pricesOf } from "../platform/models";
import { fail, type Outcome } from "../contract/errors";
import { DEFAULT_TENANT, type SessionView } from "../contract/session";
import type { CreateSessionBody } from "../contract/wire";
import { compact } from "../core/compact";
import { contextWindowRefusal } from "../core/context-window";
import { sha256Hex } from "../core/hash";
import { newPlacedId, placedIdFromDigest, placementOf } from "../core/placement";
import { newSessionToken } from "./auth";
import { registryStub, sessionStub } from "../platform/stubs";
import { priceOf } from "../core/prices";
import type * as z from "zod";

/**
 * Creates a top-level session and mints its token (returned once, stored only as a hash). With
 * an `idempotencyKey` the session id is derived from tenant and key, so a retried create (the
 * same key and body) answers the session it already made, without a token (`token` absent);
 * the same key with another body is `IDEMPOTENCY_KEY_REUSED`.
 */
export async function createTopLevelSession(
  env: Env,
  deployment: Deployment,
  body: z.infer<typeof CreateSessionBody>,
  tenant: string = DEFAULT_TENANT,
): Promise<Outcome<SessionView & { token?: string }>> {
  const model = body.model ?? defaultModelOf(env);
  const problem = deployment.models(env).problem(model);
  if (problem) return fail("INVALID_REQUEST", `model: ${problem}`);
  const window = contextWindowRefusal(body.contextWindow, env.MAX_CONTEXT_WINDOW);
  if (window) return window;
  // a budget in dollars needs its model's price: else nothing would ever count against it
  if (body.budget?.usd !== undefined && !priceOf(pricesOf(env), model))
    return fail("INVALID_REQUEST", `budget.usd: model ${model} has no price (MODEL_PRICES)`);
  if (body.mcpServers?.length && !deployment.protocols.mcp)
    return fail("UNSUPPORTED_CAPABILITY", `mcpServers: ${protocolMissing("mcp")}`);
  const unknownTools = body.toolFilter ? deployment.unknownTools(body.toolFilter) : [];
  if (unknownTools.length > 0)
    return fail("INVALID_REQUEST", `toolFilter names unknown tools: ${quoteAll(unknownTools)}`);
  const {
    model: _model,
    label,
    jurisdiction,
    locationHint,
    idempotencyKey,
    callback,
    delegationDepth,
    ...rest
  } = body;
  const placement = placementOf({ jurisdiction, locationHint });
  const id =
    idempotencyKey === undefined
      ? newPlacedId(jurisdiction)
      : placedIdFromDigest(await sha256Hex(`${tenant}\n${idempotencyKey}`), jurisdiction);
  const token = newSessionToken(id);
  const created = await sessionStub(env, id, locationHint).create({
    id,
    tokenHash: await sha256Hex(token),
    options: { model, ...compact({ ...rest, budget: rest.budget && compact(rest.budget) }) },
    ...compact({ label }),
    ...(tenant === DEFAULT_TENANT ? {} : { tenant }),
    ...placement,
    ...compact({ callback }),
    ...compact({ delegationDepth }),
    ...(idempotencyKey === undefined
      ? {}
      : { createKey: await sha256Hex(JSON.stringify({ tenant, model, body })) }),
  });
  if (!created.ok) return created;
  // The directory lives outside any jurisdiction: it keeps no label of a session confined to one.
  // A replay writes the entry again (a no-op when it is there): a create whose directory write
  // failed after the session existed is completed by its retry.
  await registryStub(env).addSession(tenant, {
    id,
    createdAt: created.value.view.createdAt,
    ...(label === undefined || jurisdiction !== undefined ? {} : { label }),
    ...placement,
  });
  if (created.value.replayed) return { ok: true, value: created.value.view };
  return { ok: true, value: { ...created.value.view, token } };
}
