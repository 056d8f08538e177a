import { expect } from "vitest";
import type { ChildInit } from "../../src/contract/child-init";
import { type Jurisdiction, reservedIdUnder } from "../../src/core/placement";
import { startRun } from "./api";
import { specOf, stub } from "./objects";

/**
 * The id of the child a start reserving `childId` under session `parentId` gets (a reserved id
 * lives in its parent's namespace: core/placement.ts `reservedIdUnder`), for a test that must name
 * that child's object before or without the start's answer (faults, tables, refused starts).
 */
export function reservedId(parentId: string, childId: string, jurisdiction?: Jurisdiction): string {
  const id = reservedIdUnder(parentId, childId, jurisdiction);
  if (!id.ok) throw new Error(id.message);
  return id.value;
}

/**
 * Puts a one-shot child of `owner` on `id` through the object's own `init` (with a run `owner`
 * never made, so its result changes nothing there), as a session that held `id` before reserved
 * ids were derived under their parent would be. No start can put a session there now, but a start
 * whose child's object refuses it (`DUPLICATE_CHILD` from `init`, inside the creation window) must
 * still leave nothing behind: this is how a test reaches that refusal.
 */
export async function occupy(id: string, owner: string, prompt = "already here"): Promise<void> {
  const template = await startRun(owner, { prompt: "a spec to copy" });
  expect(template.status).toBe(201);
  const spec: ChildInit = {
    ...(await specOf(owner, template.body.id)),
    id,
    runId: crypto.randomUUID(),
    prompt: [{ type: "text", text: prompt }],
  };
  expect(await stub(id).init(spec)).toEqual({ ok: true, value: { id } });
}
