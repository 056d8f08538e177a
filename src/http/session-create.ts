import { modelRouteProblem } from "../agent/model-router";
import { fail, type Outcome } from "../contract/errors";
import { DEFAULT_TENANT, type SessionView } from "../contract/session";
import type { CreateSessionBody } from "../contract/wire";
import { compact } from "../core/compact";
import { sha256Hex } from "../core/hash";
import { newPlacedId, placementOf } from "../core/placement";
import { newSessionToken } from "./auth";
import { registryStub, sessionStub } from "./sessions";
import type { z } from "zod";

/** Creates a top-level session and mints its token (returned once, stored only as a hash). */
export async function createTopLevelSession(
  env: Env,
  body: z.infer<typeof CreateSessionBody>,
  tenant: string = DEFAULT_TENANT,
): Promise<Outcome<SessionView & { token: string }>> {
  const model = body.model ?? env.DEFAULT_MODEL;
  const problem = modelRouteProblem(model, {
    defaultModel: env.DEFAULT_MODEL,
    openAiBaseUrl: env.OPENAI_BASE_URL,
    ...(env.AI ? { ai: env.AI as never } : {}),
  });
  if (problem) return fail("INVALID_REQUEST", `model: ${problem}`);
  const { model: _model, label, jurisdiction, locationHint, ...rest } = body;
  const placement = placementOf({ jurisdiction, locationHint });
  const id = newPlacedId(jurisdiction);
  const token = newSessionToken(id);
  const created = await sessionStub(env, id, locationHint).create({
    id,
    tokenHash: await sha256Hex(token),
    options: { model, ...compact(rest) },
    ...(label === undefined ? {} : { label }),
    ...(tenant === DEFAULT_TENANT ? {} : { tenant }),
    ...placement,
  });
  if (!created.ok) return created;
  // The directory lives outside any jurisdiction: it keeps no label of a session confined to one.
  await registryStub(env).addSession(tenant, {
    id,
    createdAt: created.value.createdAt,
    ...(label === undefined || jurisdiction !== undefined ? {} : { label }),
    ...placement,
  });
  return { ok: true, value: { ...created.value, token } };
}
