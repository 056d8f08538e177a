import { modelRouteProblem } from "../agent/model-router";
import { fail, type Outcome } from "../contract/errors";
import { newSessionId } from "../contract/ids";
import { DEFAULT_TENANT, type SessionView } from "../contract/session";
import type { CreateSessionBody } from "../contract/wire";
import { compact } from "../core/compact";
import { sha256Hex } from "../core/hash";
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
  const id = newSessionId();
  const token = newSessionToken(id);
  const { model: _model, label, ...rest } = body;
  const created = await sessionStub(env, id).create({
    id,
    tokenHash: await sha256Hex(token),
    options: { model, ...compact(rest) },
    ...(label === undefined ? {} : { label }),
    ...(tenant === DEFAULT_TENANT ? {} : { tenant }),
  });
  if (!created.ok) return created;
  await registryStub(env).addSession(tenant, {
    id,
    createdAt: created.value.createdAt,
    ...(label === undefined ? {} : { label }),
  });
  return { ok: true, value: { ...created.value, token } };
}
